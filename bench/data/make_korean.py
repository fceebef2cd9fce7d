#!/usr/bin/env python3
"""make_korean.py: bench/data/korean.txt from the project's seed documents.

Keeps the lines of /work/shared/seeds/*.txt (in name order) whose letters are
mostly Hangul: at least 60% of the line's alphabetic characters are Hangul
syllables or jamo, and at least 4 of them are. Code, formulas and English
headings drop out; a Korean sentence with a few English terms in it stays.
Lines keep their text (trailing blanks removed), each ends in a newline.

    python3 bench/data/make_korean.py [SEED_DIR] > bench/data/korean.txt
"""
import glob
import os
import sys

MIN_SHARE = 0.6
MIN_HANGUL = 4


def is_hangul(c):
    return ("\uac00" <= c <= "\ud7a3" or "\u1100" <= c <= "\u11ff"
            or "\u3130" <= c <= "\u318f")


def mostly_hangul(line):
    letters = [c for c in line if c.isalpha()]
    hangul = sum(1 for c in letters if is_hangul(c))
    return hangul >= MIN_HANGUL and hangul >= MIN_SHARE * len(letters)


def main():
    seeds = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/seeds"
    for path in sorted(glob.glob(os.path.join(seeds, "*.txt"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip()
                if mostly_hangul(line):
                    sys.stdout.write(line + "\n")


if __name__ == "__main__":
    main()
