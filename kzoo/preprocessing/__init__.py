"""The shared preprocessing layers: one home for every family's data preparation."""

from kzoo.preprocessing.engine import engine_scope, set_engine  # noqa: F401
from kzoo.preprocessing.character_ids import CharacterIds  # noqa: F401
from kzoo.preprocessing.masked_lm_mask_generator import MaskedLMMaskGenerator  # noqa: F401
from kzoo.preprocessing.multi_segment_packer import MultiSegmentPacker  # noqa: F401
from kzoo.preprocessing.next_sentence_pairs import NextSentencePairs  # noqa: F401
from kzoo.preprocessing.preprocessing_layer import PreprocessingLayer  # noqa: F401
from kzoo.preprocessing.skip_gram_sampler import SkipGramSampler  # noqa: F401
