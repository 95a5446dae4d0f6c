"""Models, one file per paper family (chapters 2-3: ``seq2seq``)."""
from .seq2seq import Seq2Seq, Seq2SeqConfig, Seq2SeqOutput, Translation, reverse_padded

__all__ = ["Seq2Seq", "Seq2SeqConfig", "Seq2SeqOutput", "Translation", "reverse_padded"]
