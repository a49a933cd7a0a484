"""The e2e harness: what every case file sees (see README.md in this folder)."""
import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

from . import build, case, helpers, outputs, paths, sanitizers, shm, venvs

# what case files could use without importing it when they ran inside the old run.py
_STD = (csv, io, json, os, re, shutil, signal, socket, struct, subprocess, sys, tempfile, time,
        traceback, uuid)


def namespace():
    """A fresh namespace for the case files: every public name of the harness's modules
    (helpers, @case, Case, Setup, BIN, ROOT, HERE...) and the standard modules above."""
    ns = {m.__name__: m for m in _STD}
    for mod in (paths, outputs, sanitizers, build, case, shm, helpers, venvs):
        ns.update((k, v) for k, v in vars(mod).items()
                  if not k.startswith("_") and not isinstance(v, type(sys)))
    ns["__name__"] = "e2e_cases"
    return ns


def case_files(folder):
    """The case files in load order: by name. A file may use another's helpers inside its
    cases (one namespace), not at load time."""
    return [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".py")]


def load_cases(folder, ns):
    """Runs every case file in ns, one namespace for all (a file may use another's
    helpers, as when they all lived in run.py); returns the registered cases."""
    for path in case_files(folder):
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        exec(code, ns)
    return list(case.CASES)
