#!/bin/sh
# Installs the Debian packages libprof needs to build and test, when they are missing.
set -e
need=""
# python3-torch: CPU PyTorch for /usr/bin/python3, run for real by the e2e tests
# openmpi-bin, libopenmpi-dev: mpirun and mpicc for the MPI e2e cases
# clang, libclang-rt-14-dev: libFuzzer for the shared-memory fuzzer (make fuzz, and its smoke run in make test)
# help2man, man-db, pkg-config: make install's man pages and pkg-config file, and their test
# libpython3.11-testsuite: CPython's own tests, run natively and under libprof (scripts/peer-test)
for pkg in build-essential clang libclang-rt-14-dev libzstd-dev libcmocka-dev libunwind-dev python3 python3-dev python3-torch python3-venv openmpi-bin libopenmpi-dev help2man man-db pkg-config libpython3.11-testsuite; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
		need="$need $pkg"
done
if [ -n "$need" ]; then
	echo "installing:$need"
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO="sudo"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
# chromium: headless, it opens prof html's pages in the e2e cases (html.py); best effort:
# without it those cases are skipped, saying so
if ! command -v chromium >/dev/null 2>&1; then
	echo "installing: chromium"
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO="sudo"
	{ $SUDO apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null; } ||
		echo "install-deps: chromium could not be installed"
fi
# The frameworks the end-to-end tests run for real (MXNet's C API through ctypes).
# A failure here is reported, and the tests that need it fail saying why.
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import mxnet' 2>/dev/null; then
	echo "installing: mxnet==1.9.1 numpy==1.23.5 (pip)"
	"$PYTHON" -m pip install -q mxnet==1.9.1 numpy==1.23.5 2>&1 | grep -v "as the 'root' user" ||
		true
	"$PYTHON" -c 'import mxnet' 2>/dev/null || echo "install-deps: mxnet could not be installed"
fi
# ONNX Runtime's C API (the wheel's libonnxruntime.so); numpy stays where MXNet needs it
if ! "$PYTHON" -c 'import onnxruntime' 2>/dev/null; then
	echo "installing: onnxruntime numpy==1.23.5 (pip)"
	"$PYTHON" -m pip install -q onnxruntime numpy==1.23.5 2>&1 | grep -v "as the 'root' user" ||
		true
	"$PYTHON" -c 'import onnxruntime' 2>/dev/null ||
		echo "install-deps: onnxruntime could not be installed"
fi
# TensorFlow in a venv of its own: TF 2.21 needs numpy >= 1.26, MXNet 1.9.1 needs 1.23.5
TFENV=${LIBPROF_TFENV:-${HOME:-/tmp}/.cache/libprof/tfenv}
if ! "$TFENV/bin/python" -c 'import tensorflow' 2>/dev/null; then
	echo "installing: tensorflow-cpu (pip, venv $TFENV)"
	{ "$PYTHON" -m venv "$TFENV" && "$TFENV/bin/python" -m pip install -q tensorflow-cpu; } 2>&1 |
		grep -v "as the 'root' user" || true
	"$TFENV/bin/python" -c 'import tensorflow' 2>/dev/null ||
		echo "install-deps: tensorflow could not be installed in $TFENV"
fi
# The current PyTorch 2.x from PyPI in a venv of its own, beside Debian's 1.13: PyPI's
# default wheel, which runs on CPU (its CUDA libraries make it ~3.2 GB to download, 5.4 GB
# installed: made once, then cached like the TensorFlow venv). Pinned to the release the
# ATen name table (formats/symbols/aten_ops.c) was made from; move both together.
TORCH2_VERSION=2.15.0
T2ENV=${LIBPROF_TORCH2ENV:-${HOME:-/tmp}/.cache/libprof/torch2env}
if ! "$T2ENV/bin/python" -c 'import torch' 2>/dev/null; then
	echo "installing: torch==$TORCH2_VERSION numpy (pip, venv $T2ENV)"
	{ "$PYTHON" -m venv "$T2ENV" &&
		"$T2ENV/bin/python" -m pip install -q "torch==$TORCH2_VERSION" numpy; } 2>&1 |
		grep -v "as the 'root' user" || true
	"$T2ENV/bin/python" -c 'import torch' 2>/dev/null ||
		echo "install-deps: torch could not be installed in $T2ENV (the torch2_* tests will fail)"
fi
# transformers in the same venv, for bench/torch_stacks.py's GPT-2 (a small GPT2Config
# with random weights: nothing is downloaded from a model hub); best effort: without it
# the bench skips GPT-2, saying so
if "$T2ENV/bin/python" -c 'import torch' 2>/dev/null &&
	! "$T2ENV/bin/python" -c 'import transformers' 2>/dev/null; then
	echo "installing: transformers (pip, venv $T2ENV)"
	"$T2ENV/bin/python" -m pip install -q transformers 2>&1 | grep -v "as the 'root' user" ||
		true
	"$T2ENV/bin/python" -c 'import transformers' 2>/dev/null ||
		echo "install-deps: transformers could not be installed in $T2ENV (bench/torch_stacks.py skips GPT-2)"
fi
# pyarrow (prof export --format parquet) and DuckDB (the tests' check of the shipped SQL)
# in a small venv of their own.
ARROWENV=${LIBPROF_ARROWENV:-${HOME:-/tmp}/.cache/libprof/arrowenv}
if ! "$ARROWENV/bin/python" -c 'import pyarrow, duckdb' 2>/dev/null; then
	echo "installing: pyarrow duckdb (pip, venv $ARROWENV)"
	{ "$PYTHON" -m venv "$ARROWENV" &&
		"$ARROWENV/bin/python" -m pip install -q pyarrow duckdb; } 2>&1 |
		grep -v "as the 'root' user" || true
	"$ARROWENV/bin/python" -c 'import pyarrow, duckdb' 2>/dev/null ||
		echo "install-deps: pyarrow and duckdb could not be installed in $ARROWENV (the parquet tests will fail)"
fi
# The PyTorch profiler's tools the Kineto export is checked against (TensorBoard's
# PyTorch profiler plugin, Holistic Trace Analysis) in a venv of their own. HTA 0.5 fails
# with pandas 3. Where they cannot be installed, a note says so and those cases are
# skipped, naming it.
TBENV=${LIBPROF_TBENV:-${HOME:-/tmp}/.cache/libprof/tbenv}
if ! "$TBENV/bin/python" -c 'import torch_tb_profiler, tensorboard, hta' 2>/dev/null; then
	echo "installing: torch-tb-profiler tensorboard HolisticTraceAnalysis (pip, venv $TBENV)"
	{ "$PYTHON" -m venv "$TBENV" &&
		"$TBENV/bin/python" -m pip install -q torch-tb-profiler tensorboard \
			HolisticTraceAnalysis "pandas<3"; } 2>&1 | grep -v "as the 'root' user" | tail -3 >/tmp/libprof-tbenv.$$ || true
	if "$TBENV/bin/python" -c 'import torch_tb_profiler, tensorboard, hta' 2>/dev/null; then
		rm -f "$TBENV/NOT-INSTALLED"
	else
		mkdir -p "$TBENV"
		{ echo "pip failed:"; cat /tmp/libprof-tbenv.$$; } >"$TBENV/NOT-INSTALLED"
		echo "install-deps: the PyTorch profiler's tools could not be installed in $TBENV (the kineto tests will be skipped)"
	fi
	rm -f /tmp/libprof-tbenv.$$
fi
# The CUDA 13 toolkit (headers, libcudart.so.13, libcupti.so.13) is part of this
# project's machine image; the NVTX, CUDA and CUPTI tests build against it and say so
# when it is missing.
CUDA_DIR=${CUDA_HOME:-/usr/local/cuda}
[ -f "$CUDA_DIR/include/nvtx3/nvToolsExt.h" ] ||
	echo "install-deps: no CUDA toolkit at $CUDA_DIR (set CUDA_HOME): the NVTX/CUDA/CUPTI tests will fail"
exit 0
