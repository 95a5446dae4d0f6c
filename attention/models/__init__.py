"""Models, one file per paper family (chapters 2-3: ``seq2seq``; chapter 9: ``luong``)."""
from .luong import LuongConfig, LuongSeq2Seq
from .seq2seq import Seq2Seq, Seq2SeqConfig, Seq2SeqOutput, Translation, reverse_padded

__all__ = ["LuongConfig", "LuongSeq2Seq", "Seq2Seq", "Seq2SeqConfig", "Seq2SeqOutput", "Translation",
           "reverse_padded"]
