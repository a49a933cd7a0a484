"""What the framework step benchmarks' processes print: the median of n timed steps."""
import statistics
import time


def print_median_step_us(step, warmup, n):
    """Runs step warmup times, then n timed times; prints the median in microseconds."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - t0)
    print("%.1f" % (statistics.median(times) / 1000))
