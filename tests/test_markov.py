"""The Markov predictor: classes, hand-made chains with closed-form limits, symmetry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.config import ConformanceSection
from site_builder.metrics import conformance, headtohead, markov


def test_nineteen_classes_and_their_bounds() -> None:
    assert markov.N_CLASSES == 19
    assert len(markov.class_labels()) == 19
    cps = [-5000, -200, -199.5, -150, -149, -10, -1, 0, 1, 10, 11, 22, 23, 150, 151, 199, 200, 9999]
    assert markov.class_of(cps).tolist() == [
        0,
        0,
        1,
        2,
        2,
        8,
        8,
        9,
        10,
        10,
        11,
        11,
        12,
        16,
        17,
        17,
        18,
        18,
    ]
    assert markov.class_labels()[9] == "0"
    assert markov.class_labels()[17] == "(150, 200)"


def test_classes_are_mirror_images() -> None:
    cps = np.arange(-300, 301)
    assert (markov.class_of(cps) == 18 - markov.class_of(-cps)).all()


def _three_state(a: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Loss / draw / win. White slips to a loss with probability a, Black to a White win with c."""
    white = np.array([[1, 0, 0], [a, 1 - a, 0], [0, 0, 1]], dtype=float)
    black = np.array([[1, 0, 0], [0, 1 - c, c], [0, 0, 1]], dtype=float)
    return white, black


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0.02, 0.9), c=st.floats(0.02, 0.9))
def test_absorbing_chain_limit_in_closed_form(a: float, c: float) -> None:
    white, black = _three_state(a, c)
    lim = markov.game(np.array([0.0, 1.0, 0.0]), white, black, max_pairs=5000, tol=1e-15)
    # per move pair: loss a, win (1 − a)c, stay (1 − a)(1 − c); absorbed in proportion
    win = (1 - a) * c / (a + (1 - a) * c)
    assert lim.converged
    assert lim.win == pytest.approx(win, abs=1e-10)
    assert lim.loss == pytest.approx(1 - win, abs=1e-10)
    assert lim.draw == pytest.approx(0.0, abs=1e-10)
    assert lim.score == pytest.approx(win, abs=1e-10)


def test_chain_cut_short_leaves_draws() -> None:
    white, black = _three_state(0.1, 0.1)
    lim = markov.game(np.array([0.0, 1.0, 0.0]), white, black, max_pairs=1, tol=0.0)
    # one pair: loss 0.1, win 0.9·0.1, still undecided 0.81 → a draw
    assert not lim.converged and lim.pairs == 1
    assert lim.vector.tolist() == pytest.approx([0.1, 0.81, 0.09])
    assert lim.score == pytest.approx(0.09 + 0.5 * 0.81)


def test_stationary_vector_of_a_two_state_chain() -> None:
    p, q = 0.3, 0.1
    m = np.array([[1 - p, p], [q, 1 - q]])
    lim = markov.limit(np.array([1.0, 0.0]), m, max_pairs=10_000, tol=1e-14)
    assert lim.vector.tolist() == pytest.approx([q / (p + q), p / (p + q)])


def test_pair_limits_equal_single_games() -> None:
    rng = np.random.default_rng(3)
    whites = [markov.stochastic(np.tril(rng.random((19, 19)))) for _ in range(3)]
    blacks = [markov.stochastic(np.triu(rng.random((19, 19)))) for _ in range(4)]
    # a nearly idle player: these chains converge pairs later than the others
    whites.append(markov.stochastic(np.eye(19) * 500 + np.tril(rng.random((19, 19)))))
    start = markov.start_vector(np.array([9, 9, 8, 10, 11]))
    batch = markov.pair_limits(start, np.stack(whites), np.stack(blacks), 200, 1e-10)
    assert batch.shape == (4, 4, 19)
    pairs = set()
    for i, w in enumerate(whites):
        for j, b in enumerate(blacks):
            single = markov.game(start, w, b, 200, 1e-10)
            pairs.add(single.pairs)
            assert batch[i, j].tolist() == pytest.approx(single.vector.tolist(), abs=1e-12)
    assert len(pairs) > 1  # chains that stop at different pairs


def test_sparse_rows_are_blended_and_ends_absorb() -> None:
    counts = np.zeros((19, 19))
    counts[9, 9] = 4
    counts[9, 8] = 1
    counts[12, 12] = 30
    counts[0, 0] = 3
    counts[18, 10] = 5  # an end class never leaves, whatever was counted
    fallback = markov.stochastic(np.eye(19) * 10 + np.eye(19, k=-1))
    m = markov.normalise(counts, fallback, 20)
    # row 9: 5 moves + 15 pseudo-moves spread like the fallback row
    assert m[9] == pytest.approx((counts[9] + 15 * fallback[9]) / 20)
    assert m[12, 12] == 1.0  # 30 moves: not blended
    assert m[0].tolist() == np.eye(19)[0].tolist()
    assert m[18].tolist() == np.eye(19)[18].tolist()
    assert m.sum(axis=1) == pytest.approx(np.ones(19))


def test_mirror_swaps_both_indices() -> None:
    w = markov.stochastic(np.tril(np.arange(361, dtype=float).reshape(19, 19) + 1))
    b = markov.mirror(w)
    assert b[3, 5] == w[15, 13]
    assert np.allclose(np.tril(b, -1), 0)  # Black's matrix is upper triangular


def _conf(seed: int, players: dict[str, float], years: tuple[int, ...] = (2000,)) -> pd.DataFrame:
    """Moves for players of different accuracy (mean error in cp), both colours, every year."""
    rng = np.random.default_rng(seed)
    rows = []
    for year in years:
        for name, err in sorted(players.items()):
            for i in range(400):
                white = i % 2 == 0
                e_best = float(rng.normal(0, 80))
                d = float(rng.exponential(err)) if rng.random() < 0.5 else 0.0
                rows.append(
                    {
                        "game_id": f"{name}{year}{i // 40}",
                        "ply": 20 + i % 40,
                        "white": white,
                        "player": name,
                        "opponent": "X",
                        "year": year,
                        "move_number": 11,
                        "e_best": round(e_best),
                        "e_played": round(e_best - d),
                    }
                )
    moves = pd.DataFrame(rows)
    return conformance.conformance_moves(
        moves, first_move=10, clip_pawns=10, gb_limit=2, k1=1.44, k2=-3.53
    )


def _models(conf: pd.DataFrame, **overrides: object) -> headtohead.Models:
    cfg = ConformanceSection(**overrides)  # type: ignore[arg-type]
    counts = conformance.year_counts(conf, cfg.predictor_kind)
    q = conformance.cumulative_share(conformance.forget(counts))
    start = markov.start_vector(np.array([9, 8, 10, 9]))
    return headtohead.build_models(conf, q, None, start, cfg)


def test_self_play_is_half_and_swapping_gives_one_minus() -> None:
    models = _models(_conf(1, {"A": 20.0, "B": 60.0}))
    a, b = ("A", 2000), ("B", 2000)
    assert models.markov_score(a, a) == pytest.approx(0.5, abs=1e-12)
    s = models.markov_score(a, b)
    assert s > 0.5  # A errs less
    assert models.markov_score(b, a) == pytest.approx(1 - s, abs=1e-12)
    h2h = headtohead.head_to_head(models)
    assert h2h.markov[0, 1] == pytest.approx(s)
    assert h2h.markov_white[0, 1] == pytest.approx(models.markov_white(a, b).score)
    la, lb = models.markov_white(a, b), models.markov_white(b, a)
    assert h2h.win[0, 1] == pytest.approx(0.5 * (la.win + lb.loss))
    assert h2h.win[0, 1] == pytest.approx(h2h.loss[1, 0])
    draw = 1 - h2h.win[0, 1] - h2h.loss[0, 1]
    assert h2h.win[0, 1] + 0.5 * draw == pytest.approx(s)


def test_white_matrices_fall_and_black_matrices_rise() -> None:
    models = _models(_conf(2, {"A": 30.0}))
    key = ("A", 2000)
    assert np.allclose(np.triu(models.white[key], 1), 0)
    assert np.allclose(np.tril(models.black[key], -1), 0)
    assert models.white[key].sum(axis=1) == pytest.approx(np.ones(19))


def test_mirrored_black_matrices() -> None:
    models = _models(_conf(3, {"A": 30.0}), markov_mirror_black=True)
    key = ("A", 2000)
    assert np.array_equal(models.black[key], markov.mirror(models.white[key]))


def test_forgetting_factor_in_the_matrices() -> None:
    conf = _conf(4, {"A": 30.0}, years=(2000, 2001))
    models = _models(conf, markov_min_row=0)
    mine = conf[(conf["player"] == "A") & conf["white"]]
    cls = markov.move_classes(
        pd.DataFrame(
            {"white": mine["white"], "e_best": mine["e_best_cp"], "e_played": mine["e_played_cp"]}
        ),
        1000,
    )
    w = np.where(mine["year"].to_numpy() == 2000, 0.5, 1.0)
    expected = markov.transitions(cls["from"].to_numpy(), cls["to"].to_numpy(), w)
    assert models.white_rows[("A", 2001)] == pytest.approx(expected.sum(axis=1))


def test_best_year_has_the_most_predicted_wins() -> None:
    conf = _conf(5, {"A": 15.0, "B": 50.0, "C": 80.0})
    conf2 = _conf(6, {"A": 90.0}, years=(2001,))
    models = _models(pd.concat([conf, conf2], ignore_index=True))
    h2h = headtohead.head_to_head(models)
    best = headtohead.best_years(h2h)
    chosen = best[best["best"]].set_index("player")["year"].to_dict()
    assert chosen == {"A": 2000, "B": 2000, "C": 2000}
    keys, matrix = headtohead.best_year_matrix(h2h, best)
    assert keys[0] == ("A", 2000) and keys[-1] == ("C", 2000)
    assert matrix[0, 1] > 0.5 and matrix[1, 0] < 0.5
