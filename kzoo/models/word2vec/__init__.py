"""word2vec: skip-gram and CBOW with negative sampling, and `WordVectors`."""

from kzoo.models.family import Family, Pretraining, lazy, register_family
from kzoo.models.word2vec import word2vec_pretraining, word2vec_shards
from kzoo.models.word2vec.negative_sampling_loss import NegativeSamplingLoss
from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone
from kzoo.models.word2vec.word2vec_cbow import Word2VecCBOW
from kzoo.models.word2vec.word2vec_converter import WordVectorsSource
from kzoo.models.word2vec.word2vec_learning_rate import Word2VecLearningRate
from kzoo.models.word2vec.word2vec_preprocessor import Word2VecPreprocessor
from kzoo.models.word2vec.word2vec_skip_gram import Word2VecSkipGram
from kzoo.models.word2vec.word2vec_task import Word2VecTask
from kzoo.models.word2vec.word_vectors import WordVectors
from kzoo.presets.preset_source import register_converter

__all__ = ["NegativeSamplingLoss", "Word2VecBackbone", "Word2VecCBOW",
           "Word2VecLearningRate", "Word2VecPreprocessor", "Word2VecSkipGram",
           "Word2VecTask", "WordVectors"]

# Foreign checkpoint formats that from_preset reads.
register_converter(WordVectorsSource)

register_family(Family(
    name="word2vec",
    title="word2vec",
    published="2013-01",
    backbones=(Word2VecBackbone,),
    converters=(WordVectorsSource,),
    tasks=(Word2VecSkipGram, Word2VecCBOW, Word2VecTask),
    classes=(WordVectors,),
    pretraining=Pretraining(
        build=word2vec_pretraining.pretrain,
        defaults=word2vec_pretraining.DEFAULTS,
        add_arguments=word2vec_pretraining.add_arguments,
        budget_options=word2vec_pretraining.budget_options,
        prepare=word2vec_shards.PREPARATION,
        from_shards=word2vec_shards.from_shards,
        task=Word2VecTask,
        example="kzoo pretrain word2vec --corpus a.txt b.txt --output runs/w2v "
                "--hidden-dim 100"),
    word_vectors=lazy("kzoo.models.word2vec.word2vec_word_in_context:word_vectors"),
    word_in_context=lazy("kzoo.models.word2vec.word2vec_word_in_context:word_in_context"),
))
