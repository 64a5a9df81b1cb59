"""Print one of the numbered commands of README.md's "Start here" section.

CI runs the README's commands as a reader copies them, so that they cannot
drift apart: the first fenced ``bash`` block under ``## Start here`` holds
them, each one line, each after a comment that starts with its number
(``# 1.``, ``# 2.``). Standard library only (it runs before any venv exists).

    python3 .ci/readme_command.py 2            # command 2, verbatim
    python3 .ci/readme_command.py 2 --tests tests/cli/demo_test.py
                                               # the same, with pytest's paths
                                               # narrowed (a dry run of CI)
"""

import argparse
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
# The test paths of the README's test command, which --tests replaces.
TEST_PATHS = "--doctest-modules kzoo tests"


def commands(text):
    """{number: command line} from the first bash block under "## Start here"."""
    section = text.split("\n## Start here", 1)
    if len(section) != 2:
        raise SystemExit("README.md has no '## Start here' section")
    block = re.search(r"```bash\n(.*?)```", section[1], re.S)
    if block is None:
        raise SystemExit("README.md's 'Start here' section has no ```bash block")
    found, number = {}, None
    for line in block.group(1).splitlines():
        line = line.strip()
        heading = re.match(r"#\s*(\d+)\.", line)
        if heading:
            number = int(heading.group(1))
        elif line and not line.startswith("#"):
            if number is None or number in found:
                raise SystemExit(f"README.md: a command without its own number: {line}")
            found[number] = line
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("number", type=int)
    parser.add_argument("--tests", default="",
                        help="space-separated pytest paths that replace "
                             f"{TEST_PATHS!r} in the command")
    args = parser.parse_args(argv)
    found = commands(README.read_text(encoding="utf-8"))
    if args.number not in found:
        raise SystemExit(f"README.md has no command {args.number}: it has "
                         f"{sorted(found)}")
    command = found[args.number]
    if args.tests:
        if TEST_PATHS not in command:
            raise SystemExit(f"--tests: command {args.number} has no {TEST_PATHS!r}")
        command = command.replace(TEST_PATHS, args.tests)
    print(command)


if __name__ == "__main__":
    sys.exit(main())
