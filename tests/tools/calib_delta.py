"""The delta method by hand, for the CLI tests of the calibration's standard
errors (test-sweep-cli.sh, test-sim-cli.sh): independent of shardplan's own
gradient (sim/calibrate-fit.c), it moves each fitted value in the INI text,
reruns the command, and forms sqrt(g' Sigma g) from the INI's std_errors and
correlations.

    from calib_delta import std_error
    se = std_error(ini_text, lambda text: log_time_of(text))

`log_time_of` runs shardplan on an INI text and returns the log of the time
(or of a ratio of two times) whose standard error is wanted.
"""
import math
import re

# the values that are not in [calibration]: (section, key)
_KEYS = {"intra_latency_us": ("intra", "latency_us"), "inter_latency_us": ("inter", "latency_us")}


def _section(ini, name):
    sec, key = _KEYS.get(name, ("calibration", name))
    m = re.search(r"^\[%s\](.*?)(?=^\[|\Z)" % sec, ini, re.M | re.S)
    assert m, "no [%s] for %s" % (sec, name)
    return key, m


def value(ini, name):
    """The value `name` has in the INI text."""
    key, m = _section(ini, name)
    return float(re.search(r"^%s = (\S+)" % key, m.group(1), re.M).group(1))


def moved(ini, name, x):
    """The INI text with `name` set to x."""
    key, m = _section(ini, name)
    body, n = re.subn(r"^%s = \S+" % key, "%s = %.17g" % (key, x), m.group(1), flags=re.M)
    assert n == 1, name
    return ini[:m.start(1)] + body + ini[m.end(1):]


def errors(ini):
    """The INI's std_errors (name -> value) and correlations ((a, b) -> r)."""
    se = {n: float(v) for n, v in (x.split() for x in
                                   re.search(r"^std_errors = (.*)$", ini, re.M).group(1).split(";"))}
    corr = {}
    for x in re.search(r"^correlations = (.*)$", ini, re.M).group(1).split(";"):
        a, b, r = x.split()
        corr[a, b] = corr[b, a] = float(r)
    return se, corr


def std_error(ini, log_time_of):
    """sqrt(g' Sigma g): g by forward differences of log_time_of in each
    fitted value (µs for latencies and overheads, log for efficiencies, at
    steps as small as the fit's own: 1e-3 in log, 0.05 µs), Sigma from the
    INI's standard errors (an efficiency's relative) and correlations."""
    se, corr = errors(ini)
    base = log_time_of(ini)
    g, s = {}, {}
    for name in se:
        v, eff = value(ini, name), name.endswith("efficiency")
        h = 1e-3 if eff else max(0.05, 1e-3 * v)
        g[name] = (log_time_of(moved(ini, name, v * math.exp(h) if eff else v + h)) - base) / h
        s[name] = se[name] / v if eff else se[name]
    var = sum(g[a] * g[b] * (1 if a == b else corr.get((a, b), 0)) * s[a] * s[b]
              for a in se for b in se)
    return math.sqrt(var)
