#!/usr/bin/env python3
"""The program suite: what the profiler costs on programs of six kinds, on Lua 5.4 and LuaJIT.

  samples/bench/suite_bench.py BUILD_DIR [--quick] [--rounds N] [--public DIR] [--programs A,B]

Each program of samples/bench/programs runs in the stock interpreter (lua5.4, luajit with the
JIT on) plain, with a second thread that never runs ("thread": what any thread costs, as glibc's
malloc locks its arenas once a process has one), under the bare signal at 1 and 10 kHz
(build/lib/libscriptprof_signal_floor.so, LD_PRELOAD: a thread signals the main thread, whose
handler does nothing), under a CPU-time timer at 100 Hz with no thread ("cpu timer 100": the
floor of a timer that needs none, at low rates), with the profiler
module sampling at 1 Hz, 1 kHz and 10 kHz, the launcher (build/bin/luaprof, luajitprof) at 1 Hz,
and (Lua 5.4) under an empty C call hook and counting calls. Rounds are interleaved; a cell is
the median of the rounds' ratios of CPU seconds (the whole process: the timer's thread
included) to the same round's plain run, with their spread. The verdicts are the overhead issue's goals: a goal is met when the median
meets it and the spread does not cross it ("unclear" when only the spread crosses it).
--public DIR runs the public programs of the same kinds (../shared/bench-programs) at 1 Hz and
1 kHz beside ours, to check that ours cost what theirs do (within 3 points).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# name: (Lua 5.4 argument, LuaJIT argument), each about half a second plain here.
PROGRAMS = {
    "numeric": (200000, 3500000),      # n-body: floating point on table fields
    "coroutines": (5000000, 10000000),  # a ring of coroutines passing a token
    "trees": (14, 16),                 # binary trees: allocation and GC
    "hash": (50000, 2500000),          # ChaCha20 blocks: 32-bit bit operations
    "fft": (400, 10000),               # a complex FFT: numeric arrays
    "strings": (300000, 600000),       # formatting, concatenation, joins
}
# --quick: about a tenth (trees: its depth, so 3 less).
QUICK = {"numeric": (20000, 350000), "coroutines": (500000, 1000000), "trees": (11, 13), "hash": (5000, 250000),
         "fft": (40, 1000), "strings": (30000, 60000)}
# Public counterparts: (file, Lua 5.4 argument or None, LuaJIT argument), ours of that kind.
PUBLIC = {
    "numeric": ("nbody.lua", 300000, 5000000),
    "coroutines": ("coroutine-ring.lua", 5000000, 10000000),
    "trees": ("binary-trees.lua", 14, 15),
    "hash": ("md5.lua", None, 10000),
    "fft": ("scimark-fft.lua", None, 20000),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("build", help="the build folder (holding lib/profiler.so)")
    parser.add_argument("--quick", action="store_true", help="about a tenth of the work, one round")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5, 1 with --quick)")
    parser.add_argument("--public", metavar="DIR", help="the public programs (../shared/bench-programs)")
    parser.add_argument("--programs", metavar="A,B", help=f"only these of {', '.join(PROGRAMS)}")
    args = parser.parse_args()
    chosen = list(PROGRAMS)
    if args.programs:
        chosen = [p.strip() for p in args.programs.split(",") if p.strip()]
        unknown = [p for p in chosen if p not in PROGRAMS]
        if unknown or not chosen:
            parser.error(f"--programs: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(PROGRAMS)}")
    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, "lib", "profiler.so")):
        parser.error(f"{build}: no lib/profiler.so (build the project first)")
    quick = args.quick
    rounds = args.rounds if args.rounds is not None else (1 if quick else 5)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    public = os.path.abspath(args.public) if args.public else None
    floor_lib = os.path.join(build, "lib", "libscriptprof_signal_floor.so")
    runtimes = [("Lua 5.4", "lua5.4", os.path.join(build, "lib", "?.so"), 0)]
    if os.path.exists(os.path.join(build, "lib", "luajit", "profiler.so")):
        runtimes.append(("LuaJIT", "luajit", os.path.join(build, "lib", "luajit", "?.so"), 1))
    launchers = [os.path.join(build, "bin", name) for name in ("luaprof", "luajitprof")]
    print(f"== program suite: CPU seconds against the plain run, median of {rounds} interleaved "
          f"round{'s' if rounds > 1 else ''} [spread]")
    for name, interpreter, cpath, which in runtimes:
        launcher = launchers[which] if os.path.exists(launchers[which]) else None
        configs = config_table(floor_lib, counting=(which == 0), launcher=launcher)
        programs = {p: a[which] for p, a in (QUICK if quick else PROGRAMS).items() if p in chosen}
        ratios = measure(interpreter, cpath, programs, configs, rounds, lambda p: os.path.join(HERE, "programs", p + ".lua"))
        print_table(name, programs, configs, ratios)
        print_verdicts(name, ratios, counting=(which == 0))
        if public:
            compare_public(name, interpreter, cpath, which, public, ratios, rounds, quick)


def config_table(floor_lib, counting, launcher):
    """(label, extra arguments before the script, extra environment[, the command instead of the
    interpreter])."""
    start = "require('profiler').start_profiler{%s}"
    configs = [
        ("plain", [], {}),
        ("thread", [], {"LD_PRELOAD": floor_lib, "SCRIPTPROF_FLOOR_HZ": "0"}),
        ("cpu timer 100", [], {"LD_PRELOAD": floor_lib, "SCRIPTPROF_FLOOR_CPU_HZ": "100"}),
        ("signal 1k", [], {"LD_PRELOAD": floor_lib, "SCRIPTPROF_FLOOR_HZ": "1000"}),
        ("1 Hz", ["-e", start % "hz = 1"], {}),
    ]
    if launcher:  # luaprof or luajitprof sampling at 1 Hz: what the launcher adds to the module
        configs.append(("launcher 1 Hz", ["--hz", "1"], {}, launcher))
    configs += [
        ("1 kHz", ["-e", start % "hz = 1000"], {}),
        ("signal 10k", [], {"LD_PRELOAD": floor_lib, "SCRIPTPROF_FLOOR_HZ": "10000"}),
        ("10 kHz", ["-e", start % "hz = 10000"], {}),
    ]
    if counting:
        configs += [("bare hook", ["-e", "require('scriptprof_bare_hook').set()"], {}),
                    ("calls", ["-e", start % "hz = 1, count_calls = true"], {})]
    return configs


def cpu_seconds(command, env):
    """User and system seconds of one run (every thread of it), its output thrown away."""
    p = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(command)}\n{err}")
    return usage.ru_utime + usage.ru_stime


def measure(interpreter, cpath, programs, configs, rounds, path_of):
    """{program: {label: [ratio per round]}}, rounds interleaved over every configuration."""
    out = {p: {c[0]: [] for c in configs} for p in programs}
    for _ in range(rounds):
        for program, argument in programs.items():
            plain = None
            for label, extra, env_extra, *command in configs:
                env = dict(os.environ, LUA_CPATH=cpath + ";;", **env_extra)
                t = cpu_seconds((command or [interpreter]) + extra + [path_of(program), str(argument)], env)
                plain = t if label == "plain" else plain
                out[program][label].append(t if label == "plain" else t / max(plain, 1e-3))
    return out


def cell(values):
    return f"{statistics.median(values):.3f} [{min(values):.2f}-{max(values):.2f}]"


def print_table(name, programs, configs, ratios):
    labels = [c[0] for c in configs]
    print(f"\n{name}: " + ", ".join(f"{p} {a}" for p, a in programs.items()))
    print(f"{'program':<11} {'plain s':>7} " + " ".join(f"{label:>18}" for label in labels[1:]))
    for program, by in ratios.items():
        print(f"{program:<11} {statistics.median(by['plain']):7.3f} " + " ".join(f"{cell(by[l]):>18}" for l in labels[1:]))


def verdict(median, spread, goal):
    if median > goal:
        return "not met"
    return "met" if max(spread) <= goal else "unclear"


def worst_by_round(ratios, first, second, combine):
    """Each round's combine(first cell, second cell) for the program whose median of them is
    worst (highest): (program, the rounds' values)."""
    by = {p: [combine(a, b) for a, b in zip(ratios[p][first], ratios[p][second])] for p in ratios}
    worst = max(by, key=lambda p: statistics.median(by[p]))
    return worst, by[worst]


def print_verdicts(name, ratios, counting):
    lines = []
    per = {p: {l: statistics.median(v) for l, v in by.items()} for p, by in ratios.items()}
    med = statistics.median(per[p]["1 kHz"] for p in per)
    # The spread of that median: each round's median over the programs.
    rounds = len(next(iter(ratios.values()))["1 kHz"])
    by_round = [statistics.median(ratios[p]["1 kHz"][r] for p in ratios) for r in range(rounds)]
    lines.append(f"1 kHz median over programs {med:.3f} [{min(by_round):.2f}-{max(by_round):.2f}] (goal <= 1.03): "
                 f"{verdict(med, by_round, 1.03)}")
    worst = max(per, key=lambda p: per[p]["1 kHz"])
    lines.append(f"1 kHz worst {worst} {per[worst]['1 kHz']:.3f} (goal <= 1.08): "
                 f"{verdict(per[worst]['1 kHz'], ratios[worst]['1 kHz'], 1.08)}")
    worst10, over = worst_by_round(ratios, "10 kHz", "signal 10k", lambda a, b: a - b)
    m10 = statistics.median(over)
    lines.append(f"10 kHz over the bare signal, worst {worst10} {100 * m10:+.1f} points (goal <= +10): "
                 f"{verdict(m10, over, 0.10)}")
    idle = max(per, key=lambda p: per[p]["1 Hz"])
    lines.append(f"idle (1 Hz), worst {idle} {per[idle]['1 Hz']:.3f} (goal <= 1.01): "
                 f"{verdict(per[idle]['1 Hz'], ratios[idle]['1 Hz'], 1.01)}; a second thread alone costs "
                 f"{idle} {per[idle]['thread']:.3f} (worst {max(per[p]['thread'] for p in per):.3f}): the timer's "
                 f"thread pays it at any rate; a CPU-time timer at 100 Hz with no thread costs {idle} "
                 f"{per[idle]['cpu timer 100']:.3f} (worst {max(per[p]['cpu timer 100'] for p in per):.3f})")
    if "launcher 1 Hz" in next(iter(ratios.values())):
        # The goal's launchers (run as fast as the interpreter with profiling off): the launcher
        # sampling at 1 Hz against the interpreter with the module sampling at 1 Hz, same round.
        wl, own = worst_by_round(ratios, "launcher 1 Hz", "1 Hz", lambda a, b: a / b)
        lines.append(f"launcher / module, both at 1 Hz, worst {wl} {statistics.median(own):.3f} (goal <= 1.01): "
                     f"{verdict(statistics.median(own), own, 1.01)}")
    if counting:
        wc, calls = worst_by_round(ratios, "calls", "bare hook", lambda a, b: a / b)
        lines.append(f"call counting / bare call hook, worst {wc} {statistics.median(calls):.3f} (goal <= 1.15): "
                     f"{verdict(statistics.median(calls), calls, 1.15)}")
    else:
        wn, near = worst_by_round(ratios, "1 kHz", "signal 1k", lambda a, b: a - b)
        lines.append(f"1 kHz over the bare signal, worst {wn} {100 * statistics.median(near):+.1f} points "
                     f"(goal <= +0.5): {verdict(statistics.median(near), near, 0.005)}")
    print(f"{name} goals:")
    for line in lines:
        print("  " + line)


def compare_public(name, interpreter, cpath, which, public, ours, rounds, quick):
    programs = {}
    for kind, (file, lua_arg, jit_arg) in PUBLIC.items():
        argument = (lua_arg, jit_arg)[which]
        if argument and kind in ours and os.path.exists(os.path.join(public, file)):
            programs[kind] = argument
    if not programs:
        return
    configs = [("plain", [], {}), ("1 Hz", ["-e", "require('profiler').start_profiler{hz = 1}"], {}),
               ("1 kHz", ["-e", "require('profiler').start_profiler{hz = 1000}"], {})]
    if which == 0:  # the public programs' Lua 5.1 names
        configs = [(l, ["-e", "unpack = table.unpack loadstring = load"] + e, v) for l, e, v in configs]
    cwd = os.getcwd()
    os.chdir(public)  # scimark-fft.lua requires scimark_lib beside it
    try:
        theirs = measure(interpreter, cpath, programs, configs, rounds, lambda p: os.path.join(public, PUBLIC[p][0]))
    finally:
        os.chdir(cwd)
    print(f"{name}, ours beside the public program of the same kind (goal: within 3 points):")
    for kind in programs:
        for label in ("1 Hz", "1 kHz"):
            a, b = statistics.median(ours[kind][label]), statistics.median(theirs[kind][label])
            print(f"  {kind:<11} {label:>6}: ours {a:.3f}, {PUBLIC[kind][0]} {b:.3f} "
                  f"({100 * (a - b):+.1f} points{'' if abs(a - b) <= 0.03 else ': apart'})")


if __name__ == "__main__":
    main()
