# html: prof html's page opened in headless Chromium (Debian's, installed by install-deps;
# the cases are skipped, saying so, only where it could not be): no console error, no
# network request, and the DOM the page renders holds the same figures as prof report
# --format json and the Chrome trace; each advice rule fires on a program built to
# trigger it and stays silent on one that does not.
# Run by test/e2e/run.py in the harness's namespace (see README.md).

import glob  # noqa: E402
import html.parser  # noqa: E402

HTML_VIEWS = ("overview", "steps", "memory", "flame", "timeline", "advice")

# A training loop over a DataLoader whose dataset sleeps SLEEP s per sample (batches of
# 8): the data wait is most of each step; SLEEP -1: over batches in a list, no DataLoader.
# HIDDEN sets the model's width.
HTML_DL = r"""
import sys, time, torch, libprof
from torch.utils.data import Dataset, DataLoader
sleep, hidden = float(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
xs = torch.randn(64, 256)
class Data(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        if sleep > 0:
            time.sleep(sleep)
        return xs[i], i % 10
m = torch.nn.Sequential(torch.nn.Linear(256, hidden), torch.nn.ReLU(),
                        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                        torch.nn.Linear(hidden, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
batches = DataLoader(Data(), batch_size=8) if sleep >= 0 else \
    [(xs[i:i + 8], torch.arange(i, i + 8) % 10) for i in range(0, 64, 8)]
for x, y in batches:
    loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    libprof.step()
"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-default-apps",
                  "--enable-logging=stderr", "--v=0", "--window-size=1400,1100"]


def chromium():
    path = shutil.which("chromium")
    if not path:
        skip("no chromium: scripts/install-deps.sh could not install Debian's chromium")
    return path


def html_make(c, captures, *args, name="report.html", want_rc=0):
    out = c.path(name)
    x = c.prof("html", *(list(captures) + ["-o", out, "--force-overwrite"] + list(args)))
    eq(x.rc, want_rc, "prof html: %r" % x)
    return out


def html_island(page):
    text = read_text(page)
    m = re.search(r'<script type="application/json" id="libprof-data">(.*?)</script>', text,
                  re.S)
    check(m, "no data island in %s" % page)
    check("<" not in m.group(1), "a raw '<' in the island")
    return json.loads(m.group(1))


class HtmlDom(html.parser.HTMLParser):
    """Every element's attributes, with the id of the nearest ancestor that has one."""
    VOID = {"meta", "br", "img", "input", "link", "hr", "area", "base", "col", "source", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.elems = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        under = next((e["id"] for e in reversed(self.stack) if e.get("id")), None)
        self.elems.append({"tag": tag, "attrs": a, "under": under})
        if tag not in self.VOID:
            self.stack.append({"tag": tag, "id": a.get("id")})

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def find(self, under=None, attr=None, tag=None):
        return [e["attrs"] for e in self.elems
                if (under is None or e["under"] == under or e["attrs"].get("id") == under)
                and (attr is None or attr in e["attrs"]) and (tag is None or e["tag"] == tag)]


def chromium_page_requests(netlog):
    """URLs the page itself asked for (Chromium's own background requests have no origin)."""
    d = load_json(netlog)
    types = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    return sorted({e["params"]["url"] for e in d["events"]
                   if types.get(e["type"]) == "URL_REQUEST_START_JOB"
                   and e.get("params", {}).get("initiator", "not an origin") != "not an origin"})


def run_chromium(c, name, args):
    """Headless Chromium with args, its own profile directory (c.path(name-chromium[-k])):
    the completed run. A run that does not end in 180 s is tried once more in a fresh
    profile (a CI run saw one screenshot hang for 180 s where the same page's same view
    took 2 s by hand); a second hang fails the case, naming it (a page whose scripts never
    end hangs every time)."""
    exe = chromium()
    for attempt in range(2):
        profile = c.path("%s-chromium%s" % (name, "-%d" % attempt if attempt else ""))
        try:
            return subprocess.run([exe] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + args,
                                  capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired:
            print("chromium %s: no end after 180 s (attempt %d)" % (name, attempt + 1))
    check(False, "chromium %s did not end in 180 s, twice" % name)


def html_browse(c, page, shots=HTML_VIEWS, tag="page"):
    """Opens page in headless Chromium: (its DOM after the scripts ran, console lines, the
    requests the page made); a screenshot per view in shots, as c.path(tag-VIEW.png)."""
    netlog = c.path(tag + "-netlog.json")
    p = run_chromium(c, tag, ["--log-net-log=" + netlog, "--dump-dom", "file://" + page])
    eq(p.returncode, 0, "chromium --dump-dom: %s" % p.stderr[-2000:])
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    for view in shots:
        png = c.path("%s-%s.png" % (tag, view))
        s = run_chromium(c, "%s-%s" % (tag, view),
                         ["--screenshot=" + png, "file://%s#%s" % (page, view)])
        check(s.returncode == 0 and os.path.getsize(png) > 5000, "screenshot of %s: %s"
              % (view, s.stderr[-1000:]))
        console += [l for l in s.stderr.splitlines() if ":CONSOLE" in l]
    dom = HtmlDom()
    dom.feed(p.stdout)
    body = dom.find(tag="body")[0]
    eq(body.get("data-error"), None, "the page's error")
    eq(body.get("data-rendered"), "1", "the page rendered")
    return dom, console, chromium_page_requests(netlog)


def html_rules(page):
    return sorted(a["rule"] for a in html_island(page)["advice"])


@case
def html_page_matches_report(c):
    # A PyTorch CPU run (Debian's torch) waiting on its DataLoader, stacks on allocations:
    # the page opens in Chromium with no console line and no request of its own; the
    # DOM's top 20 by self time, steps, per-step phases, peaks and flame graph are those of
    # prof report --format json, the Chrome trace and prof export --format folded.
    script = c.path("train.py")
    with open(script, "w") as f:
        f.write(HTML_DL)
    # PROFILER_BLOCK: a loaded machine can lose some of torch's import (and the page
    # would rightly advise a bigger ring)
    r = c.run(["/usr/bin/python3", script, "0.002", "128"], timeout=300,
              env={"PYTHONPATH": os.path.join(ROOT, "scripts"), "PROFILER_STACK": "alloc",
                   "PROFILER_BLOCK": "1"})
    eq(r.rc, 0, "the training script: %r" % r)
    cap = c.path("libprof.prof")
    page = html_make(c, [cap])
    rep = c.report_json(cap)
    dom, console, requests = html_browse(c, page)
    eq(console, [], "console lines")
    eq(requests, [], "requests made by the page")
    # the detector sees a request where a page makes one
    canary = c.path("canary.html")
    with open(canary, "w") as f:
        f.write('<html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    run_chromium(c, "canary", ["--log-net-log=" + c.path("canary.json"), "--dump-dom",
                               "file://" + canary])
    eq(chromium_page_requests(c.path("canary.json")), ["http://127.0.0.1:9/x.png"],
       "the request detector on a page that makes one")

    # overview: the top 20 by self time
    rows = [x for x in rep["rows"] if x["category"] != "memory" or x["timed"]]
    rows.sort(key=lambda x: (-x["self_ns"], x["name"]))
    want = [(x["name"], x["category"], x["self_ns"], x["count"]) for x in rows[:20]]
    got = [(a["data-name"], a["data-category"], int(a["data-self-ns"]), int(a["data-count"]))
           for a in dom.find("top-self", "data-self-ns", "tr")]
    eq(got, want, "the top 20 by self time")

    # steps: one per libprof.step(), each split as the trace shows it
    steps = dom.find("step-table", "data-step", "tr")
    eq(len(steps), rep["steps"]["count"], "steps on the page vs prof report")
    eq(len(steps), 8, "steps (64 samples in batches of 8)")
    island = html_island(page)
    pid = island["steps"]["pid"]
    t = Trace(load_json(c.path("libprof.json")))
    marks = sorted(e["ts"] for e in t.events if e.get("cat") == "step" and e["pid"] == pid)
    eq(len(marks), 8, "step marks in the trace")
    phases = {p: [int(a["data-ns"]) for a in dom.find("step-table", "data-phase", "td")
                  if a["data-phase"] == p] for p in ("data", "forward", "backward", "optimizer",
                                                      "other", "collective", "gpu")}
    durs = [int(a["data-dur-ns"]) for a in steps]
    for k in range(1, 8):  # step k+1: from mark k to mark k+1
        lo, hi = marks[k - 1], marks[k]
        check(abs(durs[k] - round((hi - lo) * 1000)) <= 2, "step %d: %d ns vs marks %r"
              % (k + 1, durs[k], (lo, hi)))
        spans = lambda prefix: sum(round(e["dur"] * 1000) for e in t.select("X", pid=pid)
                                   if e["name"].startswith(prefix) and lo <= e["ts"] < hi)
        check(abs(phases["data"][k] - spans("enumerate(DataLoader)#")) <= 2,
              "step %d's data wait %d vs the trace's %d" % (k + 1, phases["data"][k],
                                                              spans("enumerate(DataLoader)#")))
        opt = spans("Optimizer.step#") + spans("Optimizer.zero_grad#")
        check(abs(phases["optimizer"][k] - opt) <= 4, "step %d's optimizer %d vs the trace's %d"
              % (k + 1, phases["optimizer"][k], opt))
        total = sum(phases[p][k] for p in ("data", "forward", "backward", "optimizer", "other"))
        check(abs(total - durs[k]) <= 8, "step %d's phases add to %d of %d" % (k + 1, total,
                                                                               durs[k]))
        check(phases["forward"][k] > 0 and phases["backward"][k] > 0,
              "step %d: forward %d, backward %d" % (k + 1, phases["forward"][k],
                                                    phases["backward"][k]))
    # --fp-point/--bp-point: forward from the first aten::linear to the first autograd
    # node, backward from there to the end of the last ReluBackward0 (the trace's times)
    fb = html_make(c, [cap], "--fp-point", "aten::linear", "--bp-point", "ReluBackward0",
                   name="fpbp.html")
    moved = html_island(fb)["steps"]["list"]
    eq((html_island(fb)["steps"]["fp_point"], html_island(fb)["steps"]["bp_point"]),
       ("aten::linear", "ReluBackward0"), "the points in the page")
    for k in range(1, 8):
        lo, hi = marks[k - 1], marks[k]
        ops = [e for e in t.select("X", pid=pid, cat="operator") if lo <= e["ts"] < hi]
        bwd = min(e["ts"] for e in ops if "Backward" in e["name"])
        fp = min(e["ts"] for e in ops if e["name"] == "aten::linear")
        bp = max(e["ts"] + e["dur"] for e in ops if e["name"] == "ReluBackward0")
        want = (round((bwd - fp) * 1000), round((bp - bwd) * 1000))
        check(abs(moved[k]["forward"] - want[0]) <= 2 and abs(moved[k]["backward"] - want[1]) <= 2,
              "step %d's forward and backward by the points: %r, the trace's %r"
              % (k + 1, (moved[k]["forward"], moved[k]["backward"]), want))
        check(moved[k]["backward"] < phases["backward"][k], "step %d: the backward to "
              "ReluBackward0 (%d) is not shorter than to the last node (%d)"
              % (k + 1, moved[k]["backward"], phases["backward"][k]))
    # memory: each process's heap peak
    peaks = {(int(a["data-pid"]), a["data-device"]): int(a["data-peak"])
             for a in dom.find("mem-curves", "data-peak")}
    for p in rep["processes"]:
        if p["allocations"]:
            eq(peaks.get((p["pid"], "heap")), p["peak_live_bytes"], "pid %d's peak" % p["pid"])
    sites = dom.find(attr="data-bytes-at-peak", tag="tr")
    check(sites, "no allocation sites at the peak")
    # the flame graph of bytes: prof export --format folded's, less what was left out
    x = c.prof("export", cap, "--format", "folded", "--weight", "bytes", "-o", c.path("b.folded"))
    eq(x.rc, 0, "prof export --format folded: %r" % x)
    folded = sum(int(l.rsplit(" ", 1)[1]) for l in read_text(c.path("b.folded")).splitlines())
    fl = island["flame"]["bytes"]
    root = dom.find("flame-bytes", "data-value", "div")
    check(root, "no flame graph of bytes")
    eq(int(root[0]["data-value"]) + fl["left_out_value"], folded, "bytes in the flame graph")
    # advice: the data wait
    eq(html_rules(page), ["data_loading"], "advice")
    c.note("%d steps, top-20 equal to prof report; screenshots %s" %
           (len(steps), ", ".join("page-%s.png" % v for v in HTML_VIEWS)))


@case
def html_advice_torch(c):
    # data_loading fires where the dataset sleeps; host_bound where a tiny model runs
    # an operator every few microseconds (its batches in a list); no rule on a wide model
    # fed by a DataLoader from memory
    script = c.path("train.py")
    with open(script, "w") as f:
        f.write(HTML_DL)
    # PROFILER_BLOCK: torch's import, a burst of allocations, can fill a ring on a loaded
    # machine (and fire lost_events, rightly)
    env = {"PYTHONPATH": os.path.join(ROOT, "scripts"), "OMP_NUM_THREADS": "1",
           "PROFILER_BLOCK": "1"}
    got, tiny_runs = {}, 0
    for name, args in (("slow_data", ["0.004", "1024"]), ("tiny", ["-1", "8"]),
                       ("wide", ["0", "1024"])):
        # host_bound is a wall-time rule (a step under 20 us an operator): a loaded
        # machine can stretch one run's steps past it; the tiny model gets four runs
        for run in range(4 if name == "tiny" else 1):
            out = name + (str(run) if run else "")
            r = c.run(["/usr/bin/python3", script] + args, timeout=300,
                      env=dict(env, PROFILER_OUTPUT=c.path(out)))
            eq(r.rc, 0, "%s: %r" % (name, r))
            got[name] = html_rules(html_make(c, [c.path(out + ".prof")], name=out + ".html"))
            tiny_runs += name == "tiny"
            if name != "tiny" or "host_bound" in got[name]:
                break
    c.note("the tiny model ran %d time(s)" % tiny_runs)
    check("data_loading" in got["slow_data"], "slow data: %r" % got["slow_data"])
    check("host_bound" in got["tiny"] and "data_loading" not in got["tiny"], "tiny: %r"
          % got["tiny"])
    eq(got["wide"], [], "the wide model's advice")
    c.note("advice: %r" % got)


@case
def html_advice_small_allocations(c):
    got = {}
    for name, allocs in (("many", 5000), ("few", 10)):
        # PROFILER_BLOCK: 200,000 events in a burst can fill the default ring (and fire
        # lost_events, rightly)
        r = c.run([c.prog("advice_allocs"), 20, allocs],
                  env={"PROFILER_OUTPUT": c.path(name), "PROFILER_BLOCK": "1"})
        eq(r.rc, 0, "advice_allocs: %r" % r)
        got[name] = html_rules(html_make(c, [c.path(name + ".prof")], name=name + ".html"))
    eq(got["many"], ["small_allocations"], "5,000 allocations per step")
    eq(got["few"], [], "10 allocations per step")
    ev = [a for a in html_island(c.path("many.html"))["advice"]][0]["evidence"]
    check(ev.startswith("5,000 allocations of 64.00 KiB or less per step"), "evidence %r" % ev)


@case
def html_advice_gpu(c):
    # the fake GPU: 200 kernels of 0.5 us per step (their launches take 2 us) and a sync
    # in every step; then 20 kernels of 200 us per step and one sync after the last
    out, bins = build_cupti_programs()
    got = {}
    for name, args in (("tiny_synced", [200, 500, 1]), ("long_free", [20, 200000, 0])):
        r = c.run([bins["gpu_app"], "steps"] + args, env={"PROFILER_OUTPUT": c.path(name)})
        eq(r.rc, 0, "gpu_app: %r" % r)
        eq(r.kv("libprof_api"), ["1"], "prof_step found")
        got[name] = html_rules(html_make(c, [c.path(name + ".prof")], name=name + ".html"))
    eq(got["tiny_synced"], ["host_bound", "sync_every_step"], "short kernels, synced")
    eq(got["long_free"], [], "long kernels, no sync in the steps")
    # GPU busy per synced step: its 200 kernels of 500 ns, one after another
    island = html_island(c.path("tiny_synced.html"))
    gpu = [s["gpu"] for s in island["steps"]["list"][1:]]
    eq(gpu, [200 * 500] * 9, "GPU busy in steps 2-10")


@case
def html_advice_straggler(c):
    # four synthetic ranks on two hosts; rank 1 computes 5 ms longer in every step (the
    # others wait for it in the all-reduces), or no rank does
    gen_ranks(c, "slow", ranks=4, hosts=2, steps=10, filler=2, skew_us=0, slow_rank=1,
              slow_us=5000)
    gen_ranks(c, "even", ranks=4, hosts=2, steps=10, filler=2, skew_us=0, slow_rank=1,
              slow_us=0)
    slow = sorted(glob.glob(c.path("slow", "*.prof")))
    page = html_make(c, slow, name="slow.html")
    eq(html_rules(page), ["straggler"], "a slow rank")
    ev = html_island(page)["advice"][0]["evidence"]
    check(ev.startswith("Rank 1 is the slowest"), "evidence %r" % ev)
    even = html_make(c, sorted(glob.glob(c.path("even", "*.prof"))), name="even.html")
    eq(html_rules(even), [], "even ranks")
    # the timeline has the four ranks side by side
    rows = html_island(page)["timeline"]["rows"]
    eq(sorted({r["rank"] for r in rows}), [0, 1, 2, 3], "ranks in the timeline")
    dom, console, requests = html_browse(c, page, shots=("timeline",), tag="ranks")
    eq((console, requests), ([], []), "console lines and requests")


@case
def html_advice_lost_events(c):
    got = {}
    for name, block in (("lossy", "0"), ("blocking", "1")):
        r = c.run([c.prog("overload"), 200000, 71001],
                  env={"PROFILER_RING_SIZE": "4K", "PROFILER_BLOCK": block,
                       "PROFILER_OUTPUT": c.path(name)}, timeout=180)
        eq(r.rc, 0, "overload: %r" % r)
        got[name] = html_rules(html_make(c, [c.path(name + ".prof")], name=name + ".html"))
    eq(got, {"lossy": ["lost_events"], "blocking": []}, "advice")


@case
def html_cli(c):
    # the default name beside the capture; no steps, no stacks: the page says so and
    # renders; bad input gets one line and exit status 2; a damaged capture gives the
    # page of what came before and exit status 1
    profile(c, [c.prog("basic"), 5, 100, "exit:0"])
    cap = c.path("libprof.prof")
    x = c.prof("html", cap)
    eq((x.rc, x.err), (0, ""), "prof html CAPTURE")
    page = c.path("libprof.html")
    check(os.path.exists(page), "no libprof.html beside the capture")
    dom, console, requests = html_browse(c, page, shots=("steps",), tag="basic")
    eq((console, requests), ([], []), "console lines and requests")
    check(dom.find(attr="id", tag="p") and any(a.get("id") == "no-steps" for a in dom.find(tag="p")),
          "no 'no steps' note")
    again = c.prof("html", cap)
    eq(again.rc, 2, "an existing page without --force-overwrite: %r" % again)
    check(len(again.err.strip().splitlines()) == 1 and "libprof.html" in again.err,
          "one line naming the page: %r" % again.err)
    for bad, word in ((["--window", "2:1"], "--window"), (["--window", "x"], "--window"),
                      ([c.path("none.prof")], "none.prof")):
        y = c.prof("html", *([cap] if bad[0].startswith("--") else []) + bad,
                   "-o", c.path("x.html"))
        eq(y.rc, 2, "prof html %r: %r" % (bad, y))
        check(len(y.err.strip().splitlines()) == 1 and word in y.err, "one line: %r" % y.err)
        check(not os.path.exists(c.path("x.html")), "a page written for %r" % bad)
    # damaged: the capture cut in the middle
    with open(cap, "rb") as f:
        data = f.read()
    with open(c.path("cut.prof"), "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    z = c.prof("html", c.path("cut.prof"))
    eq(z.rc, 1, "a damaged capture: %r" % z)
    check(os.path.exists(c.path("cut.html")), "no page for the damaged capture")
    html_island(c.path("cut.html"))
    w = c.prof("html", cap, "--window", "0:1ms", "-o", c.path("w.html"))
    eq(w.rc, 0, "--window 0:1ms: %r" % w)
    tl = html_island(c.path("w.html"))["timeline"]
    eq((tl["start_ns"], tl["end_ns"]), (0, 1000000), "the window asked for")


@case
def html_odd_names(c):
    # names that would end the script element, open a comment, or are JavaScript's
    # object prototype's, and bytes that are not UTF-8: the page renders with no console
    # line, and shows each name as prof report's JSON has it
    r = c.run([c.prog("odd_names")])
    eq(r.rc, 0, "odd_names (%r)" % r)
    cap = c.path("libprof.prof")
    page = html_make(c, [cap])
    rep = c.report_json(cap)
    dom, console, requests = html_browse(c, page, shots=("overview", "timeline"), tag="odd")
    eq((console, requests), ([], []), "console lines and requests")
    want = sorted(x["name"] for x in rep["rows"] if x["category"] == "user")
    got = sorted(a["data-name"] for a in dom.find("top-self", "data-self-ns", "tr")
                 if a["data-category"] == "user")
    eq(got, want, "the ranges' names on the page")
    check("</script><img src=x onerror=alert(1)>" in got and "constructor" in got and
          "__proto__" in got, "names %r" % got)
    check(not dom.find(tag="img"), "an element made from a name")


HTML_INFER = r"""
import torch, libprof
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
x = torch.randn(64, 256)
with torch.no_grad():
    for i in range(6):
        m(x)
        libprof.step()
"""


@case
def html_inference_forward(c):
    # no backward (inference): each step's forward runs from its first operator to its
    # last operator's end, as the trace has them
    script = c.path("infer.py")
    with open(script, "w") as f:
        f.write(HTML_INFER)
    r = c.run(["/usr/bin/python3", script], timeout=300,
              env={"PYTHONPATH": os.path.join(ROOT, "scripts"), "PROFILER_BLOCK": "1"})
    eq(r.rc, 0, "the script: %r" % r)
    island = html_island(html_make(c, [c.path("libprof.prof")]))
    pid = island["steps"]["pid"]
    t = Trace(load_json(c.path("libprof.json")))
    marks = sorted(e["ts"] for e in t.events if e.get("cat") == "step" and e["pid"] == pid)
    steps = island["steps"]["list"]
    eq(len(steps), 6, "steps")
    for k in range(1, 6):
        lo, hi = marks[k - 1], marks[k]
        ops = [e for e in t.select("X", pid=pid, cat="operator") if lo <= e["ts"] < hi]
        want = round((max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)) * 1000)
        check(abs(steps[k]["forward"] - want) <= 2 and steps[k]["backward"] == 0,
              "step %d: forward %d, backward %d; the trace's operators span %d"
              % (k + 1, steps[k]["forward"], steps[k]["backward"], want))
