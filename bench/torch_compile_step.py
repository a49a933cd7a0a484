"""One process of the torch.compile overhead benchmark: test/e2e's compiled MLP
(test/e2e/frameworks/torch_compile_mlp.py: inductor, CPU, one thread), argv[1] training
steps timed after warm-up (the compile, served from TORCHINDUCTOR_CACHE_DIR after the
first run); prints the median step in microseconds."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e", "frameworks"))
from step_timer import print_median_step_us  # noqa: E402
from torch_compile_mlp import compiled_mlp_step  # noqa: E402

print_median_step_us(compiled_mlp_step(), 20, int(sys.argv[1]) if len(sys.argv) > 1 else 300)
