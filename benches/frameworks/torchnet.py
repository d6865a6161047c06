"""The workload's net in PyTorch (OpenSpiel's and LightZero's cells), its training step, and the
iteration (self-play N games, then SGD steps) shared by the two torch frameworks.

Net: stem conv 3x3 pad 1 (bias) + ReLU; B residual blocks (conv, ReLU, conv, + input, ReLU), no
batch norm; dense heads from the flattened (C, H, W) trunk: policy Linear(C*H*W -> A) logits,
value Linear(C*H*W -> 1) + tanh. He-normal (kaiming, fan_in, ReLU gain) weights, zero biases.
"""
import multiprocessing
import os
import time

import numpy as np
import torch
import torch.nn as nn

import common


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1)
        self.c2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.c2(torch.relu(self.c1(x))) + x)


class ResNet(nn.Module):
    def __init__(self, blocks, channels, planes, height, width, actions):
        super().__init__()
        self.stem = nn.Conv2d(planes, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[Block(channels) for _ in range(blocks)])
        self.policy = nn.Linear(channels * height * width, actions)
        self.value = nn.Linear(channels * height * width, 1)

    def forward(self, x):
        h = self.blocks(torch.relu(self.stem(x))).flatten(1)
        return self.policy(h), torch.tanh(self.value(h))[:, 0]


def make_net(name, planes, height, width, actions, expected=None):
    """The untrained net (seed common.SEED); asserts the parameter count when `expected`."""
    blocks, channels = common.NETS[name]
    torch.manual_seed(common.SEED)
    model = ResNet(blocks, channels, planes, height, width, actions)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    n = count_params(model)
    want = common.resnet_params(blocks, channels, planes, height * width, actions)
    assert n == want, (n, want)
    if expected is not None:
        assert n == expected, (n, expected)
    model.eval()
    return model


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def infer(model, planes):
    """One position (numpy (P, H, W) float32) -> (logits numpy (A,), value float)."""
    with torch.inference_mode():
        logits, value = model(torch.from_numpy(planes)[None])
    return logits[0].numpy(), float(value[0])


def legal_softmax(logits, legal):
    """Softmax over the legal actions only: {action: prior}."""
    x = logits[legal]
    x = np.exp(x - x.max())
    x /= x.sum()
    return dict(zip(legal, x.tolist()))


def train(model, data, steps, batch):
    """SGD (Nesterov, momentum 0.9, lr 0.1, wd 1e-4) on (obs, pi, z) sampled with replacement."""
    it = common.ITERATION
    obs, pi, z = (torch.from_numpy(a) for a in data)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=it["lr"], momentum=it["momentum"],
                          nesterov=True, weight_decay=it["weight_decay"])
    gen = torch.Generator().manual_seed(common.SEED)
    for _ in range(steps):
        idx = torch.randint(0, len(z), (batch,), generator=gen)
        logits, v = model(obs[idx])
        loss = -(pi[idx] * torch.log_softmax(logits, -1)).sum(-1).mean() + ((v - z[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def outcome_targets(plies, winner):
    """plies: [(obs, pi, player)], winner: player or None (draw) -> (obs, pi, z) arrays."""
    obs = np.stack([p[0] for p in plies]).astype(np.float32)
    pi = np.stack([p[1] for p in plies]).astype(np.float32)
    z = np.array([0.0 if winner is None else (1.0 if p[2] == winner else -1.0) for p in plies],
                 np.float32)
    return obs, pi, z


_PLAY = None  # the play_game of the running iteration (inherited by the forked workers)


def _worker(job):
    core, games, seed = job
    play_game = _PLAY
    if core is not None:
        os.sched_setaffinity(0, {core})
    torch.set_num_threads(1)
    return [play_game(seed + g) for g in range(games)]


def iteration(play_game, model, args):
    """Self-play `games` complete games (1 thread: here; 2: two processes on cores 0 and 1), then
    train; play_game(seed) -> (obs, pi, z). Returns the iteration fields of the JSON line."""
    global _PLAY
    _PLAY = play_game
    it = common.iteration_settings(args)
    t0 = time.perf_counter()
    if args.threads == 1:
        results = _worker((None, it["games"], 1000))
    else:
        half = it["games"] // 2
        jobs = [(0, half, 1000), (1, it["games"] - half, 2000)]
        with multiprocessing.get_context("fork").Pool(2) as pool:
            results = [g for part in pool.map(_worker, jobs) for g in part]
    t1 = time.perf_counter()
    data = tuple(np.concatenate([r[i] for r in results]) for i in range(3))
    torch.set_num_threads(args.threads)
    train(model, data, it["train_steps"], it["batch"])
    t2 = time.perf_counter()
    par = ("games one after another, 1 process, torch 1 thread" if args.threads == 1 else
           "self-play in 2 processes (cores 0 and 1, %d games each), training torch 2 threads"
           % (it["games"] // 2))
    return {"kind": "iteration", "games": it["games"], "positions": int(len(data[2])),
            "train_steps": it["train_steps"], "selfplay_s": round(t1 - t0, 3),
            "train_s": round(t2 - t1, 3), "iteration_s": round(t2 - t0, 3), "parallelism": par}
