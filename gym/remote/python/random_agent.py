#!/usr/bin/env python3
"""A random agent for an ``aware env serve`` environment: uniform actions
from a seeded RNG, episode rewards printed as it goes.

    python3 random_agent.py --url http://127.0.0.1:7777 --env app-0001 \\
        --token-file token --episodes 3 --seed 1

The token comes from --token-file, else the AWARE_ENV_TOKEN environment
variable. Standard library only.
"""

from __future__ import annotations

import argparse
import random
import sys

from aware_env import RemoteEnv, RemoteEnvError, list_envs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:7777", help="server base URL")
    p.add_argument("--env", default="", help="environment name (default: the first the server lists)")
    p.add_argument("--token-file", default="", help="file holding the bearer token (default: $AWARE_ENV_TOKEN)")
    p.add_argument("--episodes", type=int, default=1, help="episodes to run")
    p.add_argument("--max-steps", type=int, default=1000, help="bound on an episode that never ends")
    p.add_argument("--seed", type=int, default=1, help="seed of the agent and of the first episode")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each call")
    a = p.parse_args(argv)

    token = None
    if a.token_file:
        with open(a.token_file, encoding="utf-8") as f:
            token = f.read().strip()
    rng = random.Random(a.seed)
    try:
        name = a.env or list_envs(a.url, token, a.timeout)[0]
        with RemoteEnv(a.url, name, token=token, timeout=a.timeout) as env:
            print(f"{name}: observation {list(env.observation_space.names)}, action {list(env.action_space.names)}")
            for ep in range(a.episodes):
                obs, info = env.reset(seed=a.seed + ep)
                total, steps, violations = 0.0, 0, 0
                done = False
                while not done and steps < a.max_steps:
                    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(rng))
                    total += reward
                    steps += 1
                    violations += bool(info["slo_violated"])
                    done = terminated or truncated
                print(f"episode {ep + 1}: {steps} steps, reward {total:.2f}, SLO violations {violations}")
    except RemoteEnvError as e:
        print(f"random_agent: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
