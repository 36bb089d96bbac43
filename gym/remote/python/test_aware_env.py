#!/usr/bin/env python3
"""Tests of aware_env.

The offline tests need nothing. The server tests run when the Go test
TestPythonClient (gym/remote/python_test.go) starts a server and sets:

  AWARE_ENV_URL      base URL of the server
  AWARE_ENV_TOKEN    its token (read by RemoteEnv by default)
  AWARE_ENV_NAME     an environment to drive
  AWARE_ENV_FRESH    an environment nobody resets (for the 409)
  AWARE_TEST_PLAN    JSON {"seed": N, "actions": [[...], ...]}
  AWARE_TEST_OUT     where to write {"seed", "obs", "rewards", "truncated"}
                     of the plan, for the Go side to compare bit for bit
"""

from __future__ import annotations

import array
import json
import math
import os
import random
import unittest

import aware_env
from aware_env import RemoteEnv, RemoteEnvError, Space, list_envs

URL = os.environ.get("AWARE_ENV_URL", "")
NAME = os.environ.get("AWARE_ENV_NAME", "")
FRESH = os.environ.get("AWARE_ENV_FRESH", "")


class Offline(unittest.TestCase):
    def test_wire_floats(self):
        self.assertEqual(aware_env._wire_float(1), 1.0)
        self.assertEqual(aware_env._wire_float(math.nan), "NaN")
        self.assertEqual(aware_env._wire_float(-math.inf), "-Infinity")
        self.assertTrue(math.isnan(aware_env._float("NaN")))
        self.assertEqual(aware_env._float("Infinity"), math.inf)
        self.assertEqual(aware_env._float(3), 3.0)
        self.assertIsInstance(aware_env._float(3), float)
        with self.assertRaises(RemoteEnvError):
            aware_env._float("oops")
        with self.assertRaises(RemoteEnvError):
            aware_env._float(None)
        with self.assertRaises(TypeError):
            aware_env._wire_float("abc")
        # Go writes -0.0 as "-0"; the sign survives.
        z = json.loads("[-0, 0, 5]", parse_int=aware_env._parse_int)
        self.assertEqual(math.copysign(1, z[0]), -1.0)
        self.assertEqual(z[1:], [0, 5])

    def test_space(self):
        s = Space(["a", "b"], [0, -1], [1, 1])
        self.assertEqual(s.shape, (2,))
        self.assertEqual(s.dims, 2)
        x = s.sample(random.Random(3))
        self.assertEqual(x, s.sample(random.Random(3)), "seeded sampling repeats")
        self.assertTrue(s.contains(x))
        self.assertFalse(s.contains([2, 0]))
        self.assertFalse(s.contains([0]))
        with self.assertRaises(ValueError):
            Space(["a"], [0, 1], [1])
        with self.assertRaises(ValueError):
            Space(["z"], [-math.inf], [math.inf]).sample()
        self.assertEqual(aware_env._info({"sp": "NaN", "metrics": {"latency_p99": "Infinity", "replicas": 2}})["metrics"],
                         {"latency_p99": math.inf, "replicas": 2})

    def test_bad_url(self):
        with self.assertRaises(ValueError):
            RemoteEnv("localhost:7777", "x")


@unittest.skipUnless(URL, "AWARE_ENV_URL not set (run by gym/remote/python_test.go)")
class Server(unittest.TestCase):
    def test_spaces_and_list(self):
        with RemoteEnv(URL, NAME, timeout=30) as env:
            self.assertEqual(env.action_space.names, ("replicas", "cpu_cores", "memory_bytes"))
            self.assertEqual(env.action_space.shape, (3,))
            self.assertEqual(env.observation_space.dims, 9)
            self.assertEqual(env.observation_space.low[-1], -1.0)
            self.assertIn(NAME, list_envs(URL))

    def test_plan(self):
        plan = json.loads(os.environ["AWARE_TEST_PLAN"])
        env = RemoteEnv(URL, NAME)
        obs, info = env.reset(seed=plan["seed"])
        self.assertEqual(env.last_seed, plan["seed"])
        self.assertEqual(len(obs), env.observation_space.dims)
        self.assertTrue(all(isinstance(v, float) for v in obs))
        self.assertEqual(info["step"], 0)
        self.assertIn("latency_p99", info["metrics"])
        self.assertIn("slo_violated", info)
        out = {"seed": plan["seed"], "obs": [obs], "rewards": [], "truncated": []}
        want_step = 1
        for i, a in enumerate(plan["actions"]):
            # Mix sequence types: a list, a tuple and an array of doubles.
            action = (a, tuple(a), array.array("d", a))[i % 3]
            obs, reward, terminated, truncated, info = env.step(action)
            self.assertIsInstance(reward, float)
            self.assertFalse(terminated)
            # Steps count from 1 and start over after a truncation.
            self.assertEqual(info["step"], want_step)
            want_step = 1 if truncated else want_step + 1
            out["obs"].append(obs)
            out["rewards"].append(reward)
            out["truncated"].append(truncated)
        env.close()
        with open(os.environ["AWARE_TEST_OUT"], "w", encoding="utf-8") as f:
            json.dump(out, f)
        print("rewards", json.dumps(out["rewards"]))

    def test_reset_without_seed(self):
        env = RemoteEnv(URL, NAME)
        env.reset(seed=41)
        env.reset()
        self.assertEqual(env.last_seed, 42)

    def test_bad_token(self):
        with self.assertRaises(RemoteEnvError) as cm:
            RemoteEnv(URL, NAME, token="not-the-token")
        self.assertEqual(cm.exception.status, 401)
        self.assertEqual(cm.exception.message, "invalid token")
        with self.assertRaises(RemoteEnvError) as cm:
            list_envs(URL, token="not-the-token")
        self.assertEqual(cm.exception.status, 401)

    def test_wrong_action_length(self):
        env = RemoteEnv(URL, NAME)
        env.reset(seed=5)
        with self.assertRaises(RemoteEnvError) as cm:
            env.step([1, 0.5])
        self.assertEqual(cm.exception.status, 400)
        self.assertEqual(cm.exception.message,
                         "action has 2 values, the action space has 3 (replicas, cpu_cores, memory_bytes)")
        self.assertIn("step", str(cm.exception))

    def test_non_finite_action(self):
        env = RemoteEnv(URL, NAME)
        env.reset(seed=5)
        with self.assertRaises(RemoteEnvError) as cm:
            env.step([1, math.nan, 1e9])
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("action[1] (cpu_cores) is NaN", cm.exception.message)
        with self.assertRaises(TypeError):
            env.step(5)

    def test_unknown_env(self):
        with self.assertRaises(RemoteEnvError) as cm:
            RemoteEnv(URL, "no-such-env")
        self.assertEqual(cm.exception.status, 404)
        self.assertIn('unknown environment "no-such-env"', cm.exception.message)

    def test_step_before_reset(self):
        env = RemoteEnv(URL, FRESH)
        with self.assertRaises(RemoteEnvError) as cm:
            env.step([1, 0.5, 1e9])
        self.assertEqual(cm.exception.status, 409)
        self.assertIn("has not been reset", cm.exception.message)

    def test_closed(self):
        env = RemoteEnv(URL, NAME)
        env.close()
        with self.assertRaises(RemoteEnvError) as cm:
            env.reset(seed=1)
        self.assertIsNone(cm.exception.status)

    def test_unreachable(self):
        with self.assertRaises(RemoteEnvError) as cm:
            RemoteEnv("http://127.0.0.1:9", NAME, timeout=5)
        self.assertIsNone(cm.exception.status)
        self.assertIn("cannot reach", cm.exception.message)


if __name__ == "__main__":
    unittest.main(verbosity=2)
