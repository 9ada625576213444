"""Group the failures of a compat run by test function and first error line.

Usage: python compat/summarize.py compat/results/test_ridge.txt
"""

import collections
import re
import sys


def failures(text):
    """(test id, first ``E`` line) of each failure or error section of pytest's output."""
    sections = re.split(r"\n_+ (test[^\n]*?) _+\n", text)
    for name, body in zip(sections[1::2], sections[2::2]):
        errors = [line[1:].strip() for line in body.splitlines() if line.startswith("E ")]
        yield name, (errors[0] if errors else "?")[:160]


def main(path):
    text = open(path).read()
    groups = collections.defaultdict(list)
    for name, error in failures(text):
        groups[(name.split("[")[0], error)].append(name)
    for (base, error), names in sorted(groups.items()):
        print(f"{len(names):4d}  {base}: {error}")
    print(text.strip().splitlines()[-1])


if __name__ == "__main__":
    main(sys.argv[1])
