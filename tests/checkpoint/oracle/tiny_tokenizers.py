"""Three small tokenizer.json files and exact Python tokenizers for them.

Both are kept small enough to tokenize by hand here: a GPT-2 style byte-level
BPE with a handful of merges (ASCII words and one accented letter; the split
below equals GPT-2's pattern on such text), and a BERT WordPiece with a tiny
lowercase vocabulary and [CLS] ... [SEP] added by TemplateProcessing; and the
BPE again with RoBERTa's special tokens, <s> ... </s> added by RobertaProcessing.
"""

import re


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map, in GPT-2's order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) \
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


# ---------------------------------------------------------------- byte-level BPE

BPE_MERGES = ["\u0120 t", "\u0120t h", "h e", "l l", "e r", "\u0120th e", "he ll", "hell o"]


def bpe_vocab():
    bs, cs = bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(cs)}
    for m in BPE_MERGES:
        vocab.setdefault(m.replace(" ", ""), len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    return vocab


def bpe_tokenizer_json():
    vocab = bpe_vocab()
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": bl,
        "post_processor": dict(bl, trim_offsets=False),
        "decoder": bl,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": BPE_MERGES},
    }


# GPT-2's pattern with \p{L} written [^\W\d_] and \p{N} written \d: equal on
# the texts used here (letters, digits, ASCII punctuation, spaces).
GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def bpe_encode(text, vocab=None):
    vocab = vocab or bpe_vocab()
    ranks = {tuple(m.split(" ")): i for i, m in enumerate(BPE_MERGES)}
    byte_char = dict(zip(*bytes_to_unicode()))
    ids = []
    for word in GPT2_SPLIT.findall(text):
        parts = [byte_char[b] for b in word.encode("utf-8")]
        while len(parts) > 1:
            pairs = [(ranks.get((parts[i], parts[i + 1]), 1 << 30), i) for i in range(len(parts) - 1)]
            rank, i = min(pairs)
            if rank == 1 << 30:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        ids += [vocab[p] for p in parts]
    return ids


# ---------------------------------------------------------------- RoBERTa: the BPE with <s> ... </s>

ROBERTA_SPECIAL = ["<s>", "<pad>", "</s>", "<unk>"]


def roberta_vocab():
    """roberta-base's layout: <s> 0, <pad> 1, </s> 2, <unk> 3, then the byte
    tokens and the merges, <mask> last."""
    vocab = {t: i for i, t in enumerate(ROBERTA_SPECIAL)}
    for c in bytes_to_unicode()[1]:
        vocab[c] = len(vocab)
    for m in BPE_MERGES:
        vocab.setdefault(m.replace(" ", ""), len(vocab))
    vocab["<mask>"] = len(vocab)
    return vocab


def roberta_tokenizer_json():
    vocab = roberta_vocab()
    tok = bpe_tokenizer_json()
    tok["added_tokens"] = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": t == "<mask>",
                            "rstrip": False, "normalized": t == "<mask>", "special": True}
                           for t in ROBERTA_SPECIAL + ["<mask>"]]
    tok["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                             "trim_offsets": True, "add_prefix_space": False}
    tok["model"] = dict(tok["model"], vocab=vocab)
    return tok


def roberta_encode(text):
    """<s> the byte-level BPE ids </s>, as RobertaProcessing adds them."""
    vocab = roberta_vocab()
    return [vocab["<s>"]] + bpe_encode(text, vocab) + [vocab["</s>"]]


# ---------------------------------------------------------------- WordPiece

WP_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", "the", "a", "cat", "dog",
            "sat", "on", "mat", "play", "run", "##s", "##ed", "##ing", "##er", "un", "##able", "and"]


def wordpiece_tokenizer_json():
    special = {t: {"id": t, "ids": [WP_VOCAB.index(t)], "tokens": [t]} for t in ("[CLS]", "[SEP]")}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(WP_VOCAB) if t.startswith("[")]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": special,
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(WP_VOCAB)}},
    }


def wordpiece_encode(text):
    """ASCII text only: lowercase, split on spaces and punctuation, greedy
    longest-match WordPiece, [CLS] ... [SEP]."""
    vocab = {t: i for i, t in enumerate(WP_VOCAB)}
    ids = [vocab["[CLS]"]]
    for word in re.findall(r"[a-z0-9]+|[^\sa-z0-9]", text.lower()):
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[piece])
            start = end
        ids += pieces
    return ids + [vocab["[SEP]"]]
