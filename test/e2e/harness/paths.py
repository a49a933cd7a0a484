"""Where things are (the build, the test programs, the scripts), the patterns read from
every output, and giving up before any case runs."""
import os
import re
import sys


# test/e2e: the cases and programs are found from it
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("BUILD") or os.path.join(ROOT, "build"))
LIB = os.path.join(BUILD, "libprof.so")
PROF = os.path.join(BUILD, "prof")
BIN = os.path.join(BUILD, "e2e")
PROGS = os.path.join(HERE, "progs")
SCRIPTS = os.path.join(ROOT, "scripts")
# the outputs' prefix when PROFILER_OUTPUT is not set (preload/common/config.c)
DEFAULT_PREFIX = "libprof"

# "... from 1 process (torch, mxnet) -> ...": the frameworks found, when any
SUMMARY_RE = re.compile(r"^libprof: (\d+) events \((\d+) lost(?:, \d+ of them at start-up before libprof started)?\) from (\d+) process(?:es)?(?:, \d+ launcher process(?:es)? folded)?"
                        r"(?: \(([a-z]+(?:, [a-z]+)*)\))? -> ")
SANITIZER_RE = re.compile(r"ERROR: (?:Address|Leak|Thread|Memory)Sanitizer|runtime error:|"
                          r"AddressSanitizer:DEADLYSIGNAL|SUMMARY: (?:Address|Undefined)")

# alloc_family.c: the marked size of each allocator function
FAMILY_SIZES = {
    "malloc": 12345,
    "calloc": 7 * 1777,
    "realloc": 13001,
    "reallocarray": 11 * 1201,
    "posix_memalign": 13331,
    "aligned_alloc": 13568,
    "memalign": 13421,
    "valloc": 13523,
    "pvalloc": 13627,
}
# functions no libc or loader code path calls by itself: their report rows are exact
RARE = ["reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc"]


def setup_failed(msg):
    print("run.py: " + msg)
    print("0 passed, 1 failed")
    sys.exit(1)
