"""Drive an AWARE-Go environment served by ``aware env serve`` from Python.

Standard library only (``urllib.request``, ``json``); Python 3.9+. No numpy
needed: observations and actions are plain lists of floats, and actions may
be any sequence of numbers (a list, a tuple, a numpy array ...).

Serving environments
--------------------
On the Go side, serve simulated applications of the generated pool::

    head -c 32 /dev/urandom | base64 > token   # keep it private (chmod 600)
    aware env serve --addr 127.0.0.1:7777 --token-file token --apps 4

A random agent
--------------
::

    import random
    from aware_env import RemoteEnv

    rng = random.Random(1)
    with RemoteEnv("http://127.0.0.1:7777", "app-0001", token=open("token").read().strip()) as env:
        print(env.observation_space.names, env.action_space.names)
        obs, info = env.reset(seed=1)
        total, done = 0.0, False
        while not done:
            action = env.action_space.sample(rng)   # [replicas, cpu_cores, memory_bytes]
            obs, reward, terminated, truncated, info = env.step(action)
            total += reward
            done = terminated or truncated
        print("episode reward", total, "SLO preservation of the last step", info["sp"])

The token may also come from the ``AWARE_ENV_TOKEN`` environment variable.
``reset(seed=None)`` lets the server pick the seed (the previous one plus
one); ``env.last_seed`` says which it used.

Wire format
-----------
Floats cross the wire bit-identically (shortest round-trip decimal). NaN and
+/-Inf, which JSON cannot carry, travel as the strings "NaN", "Infinity" and
"-Infinity" and are turned back into floats here; the server refuses them in
actions. ``info`` is a dict: ``step``, ``sp`` (SLO preservation ratio of the
step), ``slo_violated`` and ``metrics`` with ``replicas``, ``ready_replicas``,
``cpu_limit`` and ``cpu_usage`` (cores), ``memory_limit``, ``memory_usage``
and ``memory_peak`` (bytes), ``io_rate`` and ``net_rate`` (bytes/s),
``arrival_rate``, ``processed_rate`` and ``dropped_rate`` (requests/s),
``latency_p50``, ``latency_p95`` and ``latency_p99`` (seconds) and
``oom_kills``.

Every failure raises :class:`RemoteEnvError` carrying the server's message
and HTTP status (400 bad request, 401 bad token, 404 unknown environment,
409 step before reset, 413 body too large, 5xx the environment failed;
``status`` is None when no reply arrived).
"""

from __future__ import annotations

import json
import math
import os
import random
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["RemoteEnv", "RemoteEnvError", "Space", "list_envs", "TOKEN_ENV"]

API_VERSION = "v1"

#: Environment variable holding the bearer token when none is given.
TOKEN_ENV = "AWARE_ENV_TOKEN"

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class RemoteEnvError(Exception):
    """A failed call: ``status`` is the HTTP status (None if no reply came),
    ``message`` the server's explanation."""

    def __init__(self, message: str, status: Optional[int] = None, op: str = "", env: str = ""):
        self.message = message
        self.status = status
        self.op = op
        self.env = env
        where = " ".join(p for p in (op, env) if p)
        prefix = f"{where}: " if where else ""
        code = f"{status} " if status is not None else ""
        super().__init__(f"{prefix}{code}{message}")


def _float(v: Any) -> float:
    """A wire float (a number or one of the non-finite strings) as a float."""
    if isinstance(v, str):
        try:
            return _NON_FINITE[v]
        except KeyError:
            raise RemoteEnvError(f"server sent the string {v!r} where a number belongs") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RemoteEnvError(f"server sent {v!r} where a number belongs")
    return float(v)


def _floats(vs: Any) -> List[float]:
    if not isinstance(vs, list):
        raise RemoteEnvError(f"server sent {vs!r} where a list of numbers belongs")
    return [_float(v) for v in vs]


def _parse_int(s: str) -> Any:
    # Go writes a negative zero float as "-0"; keep its sign.
    return -0.0 if s == "-0" else int(s)


def _wire_float(v: Any) -> Any:
    """An action value for the wire: finite floats as numbers, non-finite
    ones as the strings (which the server refuses with a clear message)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"action value {v!r} is not a number") from None
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def _info(d: Any) -> Dict[str, Any]:
    """Turns the non-finite strings inside info back into floats."""
    if not isinstance(d, dict):
        raise RemoteEnvError(f"server sent info {d!r}, not an object")

    def fix(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, str) and v in _NON_FINITE:
            return _NON_FINITE[v]
        return v

    return fix(d)


class Space:
    """A box: one named dimension per entry, between ``low`` and ``high``."""

    def __init__(self, names: Sequence[str], low: Sequence[float], high: Sequence[float]):
        if not (len(names) == len(low) == len(high)):
            raise ValueError(f"space: {len(names)} names, {len(low)} lows, {len(high)} highs")
        self.names: Tuple[str, ...] = tuple(names)
        self.low: List[float] = [float(x) for x in low]
        self.high: List[float] = [float(x) for x in high]

    @classmethod
    def _from_wire(cls, d: Any) -> "Space":
        if not isinstance(d, dict):
            raise RemoteEnvError(f"server sent space {d!r}, not an object")
        s = cls(d.get("names") or [], _floats(d.get("low")), _floats(d.get("high")))
        if d.get("dims") != len(s.names):
            raise RemoteEnvError(f"server sent a space with dims {d.get('dims')!r} but {len(s.names)} names")
        return s

    @property
    def dims(self) -> int:
        return len(self.names)

    @property
    def shape(self) -> Tuple[int]:
        return (len(self.names),)

    def contains(self, x: Sequence[float]) -> bool:
        v = list(x)
        return len(v) == self.dims and all(lo <= float(a) <= hi for a, lo, hi in zip(v, self.low, self.high))

    def sample(self, rng: Optional[random.Random] = None) -> List[float]:
        """A uniform point of the box; pass a seeded ``random.Random``."""
        rng = rng or random.Random(0)
        out = []
        for n, lo, hi in zip(self.names, self.low, self.high):
            if math.isinf(lo) or math.isinf(hi):
                raise ValueError(f"cannot sample dimension {n!r}: it is unbounded")
            out.append(rng.uniform(lo, hi))
        return out

    def __repr__(self) -> str:
        return f"Space(names={list(self.names)}, low={self.low}, high={self.high})"


class _Transport:
    def __init__(self, base_url: str, token: Optional[str], timeout: float):
        u = urllib.parse.urlparse(base_url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError(f"base URL {base_url!r}: want http://host:port or https://host:port")
        self.base = base_url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        if self.token is not None:
            self.token = self.token.strip()
        self.timeout = timeout

    def call(self, op: str, env: str, method: str, path: str, body: Any = None) -> Any:
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                msg = json.loads(raw)["error"]
            except Exception:
                msg = f"non-JSON reply {raw[:200]!r}"
            raise RemoteEnvError(msg, e.code, op, env) from None
        except (socket.timeout, TimeoutError):
            raise RemoteEnvError(f"no reply from {self.base} within {self.timeout} s", None, op, env) from None
        except urllib.error.URLError as e:
            raise RemoteEnvError(f"cannot reach {self.base}: {e.reason}", None, op, env) from None
        try:
            return json.loads(raw, parse_int=_parse_int)
        except ValueError as e:
            raise RemoteEnvError(f"malformed reply: {e}", None, op, env) from None


def list_envs(base_url: str, token: Optional[str] = None, timeout: float = 30.0) -> List[str]:
    """The names of the environments the server serves."""
    reply = _Transport(base_url, token, timeout).call("list", "", "GET", f"/{API_VERSION}/envs")
    return list(reply["envs"])


class RemoteEnv:
    """One environment of an ``aware env serve`` server, Gymnasium-style.

    ``token`` defaults to the ``AWARE_ENV_TOKEN`` environment variable (no
    token for a server started with --insecure); ``timeout`` bounds each
    call in seconds. The spaces are fetched once, here.
    """

    def __init__(self, base_url: str, env_name: str, token: Optional[str] = None, timeout: float = 60.0):
        self._t = _Transport(base_url, token, timeout)
        self.env_name = env_name
        self._path = f"/{API_VERSION}/envs/{urllib.parse.quote(env_name, safe='')}"
        self._closed = False
        self.last_seed: Optional[int] = None
        sp = self._call("spaces", "GET", "/spaces")
        self.observation_space = Space._from_wire(sp.get("observation"))
        self.action_space = Space._from_wire(sp.get("action"))

    def _call(self, op: str, method: str, suffix: str, body: Any = None) -> Any:
        if self._closed:
            raise RemoteEnvError("the environment is closed", None, op, self.env_name)
        reply = self._t.call(op, self.env_name, method, self._path + suffix, body)
        if not isinstance(reply, dict):
            raise RemoteEnvError(f"malformed reply {reply!r}", None, op, self.env_name)
        return reply

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[List[float], Dict[str, Any]]:
        """Starts an episode; returns (obs, info). ``options`` is accepted
        for Gymnasium compatibility and must be empty."""
        if options:
            raise ValueError("options are not supported")
        body: Dict[str, Any] = {}
        if seed is not None:
            if isinstance(seed, bool) or int(seed) != seed or not 0 <= int(seed) < 2**64:
                raise ValueError(f"seed {seed!r}: want an integer from 0 to 2**64-1")
            body["seed"] = int(seed)
        r = self._call("reset", "POST", "/reset", body)
        self.last_seed = r.get("seed")
        return _floats(r.get("obs")), _info(r.get("info"))

    def step(self, action: Sequence[float]) -> Tuple[List[float], float, bool, bool, Dict[str, Any]]:
        """Applies ``action`` (one number per action dimension) for one step;
        returns (obs, reward, terminated, truncated, info)."""
        try:
            values = [_wire_float(v) for v in action]
        except TypeError as e:
            raise TypeError(f"action {action!r}: {e}") from None
        r = self._call("step", "POST", "/step", {"action": values})
        return (_floats(r.get("obs")), _float(r.get("reward")), bool(r.get("terminated")),
                bool(r.get("truncated")), _info(r.get("info")))

    def close(self) -> None:
        """Marks the client closed; the server-side environment stays."""
        self._closed = True

    def __enter__(self) -> "RemoteEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteEnv({self._t.base!r}, {self.env_name!r})"
