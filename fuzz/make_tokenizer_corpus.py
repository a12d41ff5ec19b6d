#!/usr/bin/env python3
"""Writes the seed corpus for tokenizer_fuzz into fuzz/corpus/tokenizer/.

Each seed is text as a user might give it: prose, code, Chinese, emoji, ChatML with special
tokens (Qwen3's control tokens and its user-defined <think>), long runs of one character, and
invalid UTF-8 (a lone continuation byte, a truncated sequence, an overlong encoding, bytes
0xFE/0xFF). Usage: fuzz/make_tokenizer_corpus.py (overwrites the seeds).
"""
from seed_corpus import write_seeds

SEEDS = {
    "prose": "The quick brown fox jumps over the lazy dog. It's 3.14 o'clock!\n".encode(),
    "code": b"def fibonacci(n):\n    if n < 2:\n        return n\n\treturn fib(n-1)+fib(n-2)\n",
    "chinese": "你好，世界。我们今天学习分词器。".encode(),
    "emoji": "ok 👍🏽 family 👨‍👩‍👧 flag 🇩🇪".encode(),
    "chatml": b"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi"
              b"<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>",
    "special_lookalikes": b"<|im_start <|im_end|x <think <|endoftext|><|endoftext|",
    "long_run": b" " * 300 + b"a" * 300 + b"\n" * 50,
    "digits": b"1234567890 0.000001 1e-9 -42 3,141,592",
    "invalid_utf8": b"a\x80b\xe2\x82c\xc0\x80d\xfe\xffe\xf0\x9f\x98",
    "mixed_scripts": "Ελληνικά русский العربية हिन्दी 日本語 한국어".encode(),
}

if __name__ == "__main__":
    write_seeds("tokenizer", SEEDS)
