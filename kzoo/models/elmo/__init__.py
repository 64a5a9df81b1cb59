"""ELMo: a character-based bidirectional LSTM language model and its uses."""

from kzoo.models.elmo import elmo_continued_pretraining, elmo_pretraining, elmo_shards
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_converter import AllenNlpElmoSource
from kzoo.models.elmo.elmo_embedder import ElmoEmbedder
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.elmo.elmo_language_model_preprocessor import (
    ElmoLanguageModelPreprocessor,
)
from kzoo.models.family import Family, Pretraining, lazy, register_family
from kzoo.presets.preset_source import register_converter

__all__ = ["ElmoBackbone", "ElmoEmbedder", "ElmoEmbedding", "ElmoLanguageModel",
           "ElmoLanguageModelPreprocessor"]

# Foreign checkpoint formats that from_preset reads.
register_converter(AllenNlpElmoSource)

register_family(Family(
    name="elmo",
    title="ELMo",
    published="2018-02",
    backbones=(ElmoBackbone,),
    converters=(AllenNlpElmoSource,),
    tasks=(ElmoLanguageModel,),
    classes=(ElmoEmbedder, ElmoEmbedding),
    pretraining=Pretraining(
        build=elmo_pretraining.pretrain,
        continue_from=elmo_continued_pretraining.continue_from,
        defaults=elmo_pretraining.DEFAULTS,
        add_arguments=elmo_pretraining.add_arguments,
        evaluate=elmo_pretraining.evaluate,
        held_out=elmo_pretraining.held_out,
        budget_options=elmo_pretraining.budget_options,
        prepare=elmo_shards.PREPARATION,
        from_shards=elmo_shards.from_shards,
        task=ElmoLanguageModel,
        example="kzoo pretrain elmo --corpus news.txt --output runs/elmo"),
    embed=lazy("kzoo.models.elmo.elmo_embedder:sentence_vectors"),
    word_in_context=lazy("kzoo.models.elmo.elmo_word_in_context:word_in_context"),
    export=ElmoEmbedding.from_preset,
))
