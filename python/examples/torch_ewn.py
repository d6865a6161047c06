"""A tiny PyTorch policy learns EinStein wuerfelt nicht! 3x3x3 by self-play for a minute and
is scored against the optimal player after every epoch (docs/python.md).

    pip install ./python torch && python python/examples/torch_ewn.py
"""

import random
import time

import torch

import tabula

game = tabula.load_game("ewn:3x3x3")
game.solve()  # exact values in memory (a second or two): the optimal player's
optimal = tabula.Player("optimal", game)
n_actions = game.num_distinct_actions()
size = 1
for d in game.observation_tensor_shape():
    size *= d

net = torch.nn.Sequential(
    torch.nn.Flatten(), torch.nn.Linear(size, 64), torch.nn.ReLU(), torch.nn.Linear(64, n_actions)
)
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
rng = random.Random(0)


def policy(state):
    """Log-probabilities over the legal actions of a decision state."""
    x = torch.from_numpy(state.observation_tensor()).unsqueeze(0)
    logits = net(x)[0]
    mask = torch.full((n_actions,), float("-inf"))
    mask[state.legal_actions()] = 0.0
    return torch.log_softmax(logits + mask, dim=0)


def chance(state):
    outcomes, probs = zip(*state.chance_outcomes())
    state.apply_action(rng.choices(outcomes, probs)[0])


def self_play_game():
    """One game sampled from the policy: each player's log-probabilities, and the returns."""
    state, logps = game.new_initial_state(), ([], [])
    while not state.is_terminal():
        if state.is_chance_node():
            chance(state)
            continue
        logp = policy(state)
        a = torch.multinomial(logp.exp(), 1).item()
        logps[state.current_player()].append(logp[a])
        state.apply_action(a)
    return logps, state.returns()


def wr_p(games=200):
    """Mean score of the greedy policy against the optimal player, the policy first in even
    games (win 1, draw 0.5, loss 0): tabula's WR_p."""
    total = 0.0
    with torch.no_grad():
        for g in range(games):
            me, state = g % 2, game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    chance(state)
                elif state.current_player() == me:
                    state.apply_action(int(policy(state).argmax()))
                else:
                    state.apply_action(optimal.act(state, seed=g))
            total += state.scores()[me]
    return total / games


start, epoch = time.time(), 0
print(f"epoch 0  WR_p {wr_p():.3f}")
while time.time() - start < 60:
    epoch += 1
    loss = 0.0
    for _ in range(100):
        logps, returns = self_play_game()
        for p in (0, 1):
            loss = loss - returns[p] * torch.stack(logps[p]).sum() if logps[p] else loss
    opt.zero_grad()
    (loss / 100).backward()
    opt.step()
    print(f"epoch {epoch}  WR_p {wr_p():.3f}  ({time.time() - start:.0f} s)")
