"""A byte-level BPE tokenizer, trained and written as GPT-2's tokenizer.json is.

Training, after Sennrich et al. (2016) and GPT-2's byte-level variant:
  1. the text is split into words by GPT-2's pre-tokenizer pattern (a word keeps its
     leading space: " animal");
  2. each word's UTF-8 bytes are its first symbols, so any text, Korean included,
     always tokenizes (in the worst case one token per byte);
  3. the most frequent adjacent pair of symbols over all words (counted with the
     words' frequencies) is merged into one new symbol, until the vocabulary holds
     `vocab_size` tokens. Ties go to the pair that sorts first, so training is
     deterministic.

Python's `re` has no \\p{L} or \\p{N}; training approximates them with [^\\W\\d_]
and \\d. That only changes which pairs are counted: the tokenizer.json written
holds GPT-2's exact pattern, which the daemon (and Hugging Face) apply.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "checkpoint", "oracle"))
import tiny_tokenizers  # noqa: E402  (bytes_to_unicode)

# GPT-2's pre-tokenizer, as tokenizers' ByteLevel(use_regex=True) applies it, is
#   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# approximated here without \p{...} ('_' is neither letter nor number there).
_APPROX = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")

END_OF_TEXT = "<|endoftext|>"


# GPT-2's map from the 256 byte values to printable characters (space is 'Ġ'),
# the one the checkpoint oracle's tokenizers use
BYTE_CHAR = dict(zip(*tiny_tokenizers.bytes_to_unicode()))


def words_of(text):
    """GPT-2 pre-tokenization (approximate, see above): words as byte-level strings."""
    return ["".join(BYTE_CHAR[b] for b in w.encode("utf-8")) for w in _APPROX.findall(text)]


class _Pairs:
    """Pair counts over a word list, and which words hold each pair."""

    def __init__(self, words, counts):
        self.count = collections.Counter()
        self.where = collections.defaultdict(set)
        for i, w in enumerate(words):
            self.add(i, w, counts[i])

    def add(self, i, w, n):
        for a, b in zip(w, w[1:]):
            self.count[(a, b)] += n
            self.where[(a, b)].add(i)

    def remove(self, i, w, n):
        for a, b in zip(w, w[1:]):
            self.count[(a, b)] -= n
            if self.count[(a, b)] <= 0:
                del self.count[(a, b)]

    def best(self):
        return min(self.count.items(), key=lambda e: (-e[1], e[0]))[0]


def _merge_word(w, pair, joined):
    out, i = [], 0
    while i < len(w):
        if i + 1 < len(w) and w[i] == pair[0] and w[i + 1] == pair[1]:
            out.append(joined)
            i += 2
        else:
            out.append(w[i])
            i += 1
    return tuple(out)


def train(texts, vocab_size):
    """Merges (list of (a, b)) learned from texts until 256 + merges + 1 special
    tokens make vocab_size."""
    freq = collections.Counter()
    for t in texts:
        freq.update(words_of(t))
    words = [tuple(w) for w in freq]
    counts = [freq[w] for w in freq]
    pairs = _Pairs(words, counts)
    merges = []
    while 256 + len(merges) + 1 < vocab_size and pairs.count:
        pair = pairs.best()
        joined = pair[0] + pair[1]
        merges.append(pair)
        for i in list(pairs.where.pop(pair, ())):
            w = words[i]
            merged = _merge_word(w, pair, joined)
            if merged != w:
                pairs.remove(i, w, counts[i])
                words[i] = merged
                pairs.add(i, merged, counts[i])
    return merges


class Tokenizer:
    """Encodes with learned merges, lowest rank first, as GPT-2's BPE does."""

    def __init__(self, merges):
        self.merges = merges
        self.rank = {p: r for r, p in enumerate(merges)}
        self.vocab = {BYTE_CHAR[b]: b for b in range(256)}
        for a, b in merges:
            self.vocab[a + b] = len(self.vocab)
        self.eot = len(self.vocab)
        self._cache = {}

    def _bpe(self, word):
        w = tuple(word)
        while len(w) > 1:
            ranked = [(self.rank.get(p, 1 << 30), p) for p in zip(w, w[1:])]
            r, pair = min(ranked)
            if r == 1 << 30:
                break
            w = _merge_word(w, pair, pair[0] + pair[1])
        return w

    def encode(self, text):
        ids = []
        for word in words_of(text):
            if word not in self._cache:
                self._cache[word] = [self.vocab[s] for s in self._bpe(word)]
            ids.extend(self._cache[word])
        return ids

    def to_json(self):
        """tokenizer.json in the layout of GPT-2's (tokenizers 0.13)."""
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": True}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [{"id": self.eot, "content": END_OF_TEXT, "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": True,
                              "special": True}],
            "normalizer": None,
            "pre_tokenizer": byte_level,
            "post_processor": dict(byte_level, trim_offsets=False),
            "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False,
                      "vocab": dict(self.vocab, **{END_OF_TEXT: self.eot}),
                      "merges": [a + " " + b for a, b in self.merges]},
        }


def write_tokenizer_json(tok, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok.to_json(), f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
