"""Models, one file per paper family, all registered by name (:mod:`.registry`).

* ``interface`` -- the typed results every model returns (``Encoded``, ``Step``, ``Translation``,
  ``ClassifierOutput`` ...)
* ``base``      -- :class:`SequenceModel`: encode once, step per token; decoding comes with it
* ``decoding``  -- greedy and (batched) beam search for any ``SequenceModel``, in eval mode
* ``checks``    -- the shared input checks: token ids against a vocabulary, a config's special ids
* ``registry``  -- ``@register_model(name)``, :func:`build`, :data:`MODELS`
* ``seq2seq``   -- chapters 2-3: Cho/Sutskever encoder–decoder, Bahdanau's RNNsearch
* ``luong``     -- chapter 9: global and local attention, input feeding
* ``transformer`` -- chapter 6: the Transformer (Vaswani et al. 2017), parallel teacher forcing, cached decoding
* ``lstmn``     -- chapter 6: Cheng et al.'s LSTMN, an LSTM attending over its own past states (intra-attention)
* ``selfattentive`` -- chapter 6: Lin et al.'s structured self-attentive sentence embedding and its penalty
* ``pooling``   -- chapter 6: the BiLSTM sentence encoder, pooled by last state, mean or max (no attention)
* ``featurewise`` -- chapter 4: BiLSTM states pooled by scalar or multi-dimensional (feature-wise) attention
* ``cmla``      -- chapter 4: Wang et al.'s coupled multi-layer attentions, aspect and opinion terms tagged together
* ``han``       -- chapter 5: Yang et al.'s hierarchical attention network (words, then sentences) and HN-AVE/HN-MAX
* ``memn2n``    -- chapter 7: Sukhbaatar et al.'s end-to-end memory network, K hops over a story
* ``dmn``       -- chapter 7: Kumar et al.'s dynamic memory network, attention gates over facts, several passes
* ``dmn_paper`` -- chapter 7: the same paper's DMN as it writes it (one story GRU, sigmoid gates, attention GRU)
* ``ntm``       -- chapter 7: a Neural Turing Machine (controller, read and write heads) for the copy task
* ``nested``    -- chapter 5: Ji et al.'s nested word/character attention (hybrid encoder, character decoder)
* ``captioner`` -- chapter 8: Xu et al.'s Show, Attend and Tell (soft, hard/REINFORCE and Gumbel attention)
"""

from .base import SequenceModel
from .interface import (
    ClassifierOutput,
    TaggerOutput,
    Encoded,
    EncoderMemory,
    SequenceOutput,
    Step,
    Translation,
    select_rows,
)
from .captioner import CaptionerConfig, CaptionerOutput, ShowAttendTell
from .cmla import CMLA, CMLAConfig, CoupledAttentionLayer
from .featurewise import ATTENTION_POOLS, AttentionPooling, AttentionPoolingConfig
from .han import HANClassifier, HANConfig
from .lstmn import LSTMNClassifier, LSTMNConfig, LSTMNTapes
from .dmn import DMN, DMNConfig
from .dmn_paper import PaperDMN, PaperDMNConfig
from .memn2n import MemN2N, MemN2NConfig
from .nested import NestedConfig, NestedSeq2Seq
from .ntm import NTM, NTMConfig
from .luong import LuongConfig, LuongSeq2Seq, LuongState
from .pooling import BiLSTMEncoder, BiLSTMPooling, PoolingClassifierConfig
from .registry import MODELS, build, count_parameters, model_name, register_model
from .selfattentive import SelfAttentiveClassifier, SelfAttentiveConfig, penalized_loss, penalty
from .seq2seq import Encoder, RNNEncoderDecoder, Seq2Seq, Seq2SeqConfig, reverse_padded
from .transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    KeyValues,
    PositionalEncoding,
    Residual,
    Transformer,
    TransformerConfig,
    TransformerMaps,
    TransformerOutput,
    TransformerState,
    noam_schedule,
)

__all__ = [
    "ATTENTION_POOLS",
    "AttentionPooling",
    "AttentionPoolingConfig",
    "BiLSTMEncoder",
    "BiLSTMPooling",
    "CMLA",
    "CMLAConfig",
    "CoupledAttentionLayer",
    "CaptionerConfig",
    "CaptionerOutput",
    "ClassifierOutput",
    "DMN",
    "DMNConfig",
    "DecoderLayer",
    "Encoded",
    "Encoder",
    "EncoderLayer",
    "EncoderMemory",
    "FeedForward",
    "HANClassifier",
    "HANConfig",
    "KeyValues",
    "LSTMNClassifier",
    "LSTMNConfig",
    "LSTMNTapes",
    "LuongConfig",
    "LuongSeq2Seq",
    "LuongState",
    "MODELS",
    "MemN2N",
    "MemN2NConfig",
    "NTM",
    "NTMConfig",
    "NestedConfig",
    "NestedSeq2Seq",
    "PaperDMN",
    "PaperDMNConfig",
    "PoolingClassifierConfig",
    "PositionalEncoding",
    "RNNEncoderDecoder",
    "Residual",
    "SelfAttentiveClassifier",
    "SelfAttentiveConfig",
    "Seq2Seq",
    "ShowAttendTell",
    "Seq2SeqConfig",
    "SequenceModel",
    "SequenceOutput",
    "Step",
    "TaggerOutput",
    "Transformer",
    "TransformerConfig",
    "TransformerMaps",
    "TransformerOutput",
    "TransformerState",
    "Translation",
    "build",
    "count_parameters",
    "model_name",
    "noam_schedule",
    "penalized_loss",
    "penalty",
    "register_model",
    "reverse_padded",
    "select_rows",
]
