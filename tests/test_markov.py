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


def _three_state(a: float, c: float, u: float, v: float) -> tuple[np.ndarray, np.ndarray]:
    """Loss / draw / win. White slips from a draw to a loss with probability a and from a win
    to a draw with u; Black slips from a draw to a White win with c and from a loss (a won
    position for Black) to a draw with v."""
    white = np.array([[1, 0, 0], [a, 1 - a, 0], [0, u, 1 - u]], dtype=float)
    black = np.array([[1 - v, v, 0], [0, 1 - c, c], [0, 0, 1]], dtype=float)
    return white, black


@settings(max_examples=60, deadline=None)
@given(
    a=st.floats(0.01, 0.9),
    c=st.floats(0.01, 0.9),
    u=st.floats(1e-4, 0.9),
    v=st.floats(1e-4, 0.9),
)
def test_stationary_vector_in_closed_form(a: float, c: float, u: float, v: float) -> None:
    white, black = _three_state(a, c, u, v)
    # M = W·B is tridiagonal (a birth-death chain), so detailed balance gives π:
    # π_L·v = π_D·a(1 − v) and π_D·(1 − a)c = π_W·u(1 − c)
    loss, win = a * (1 - v) / v, (1 - a) * c / (u * (1 - c))
    expected = np.array([loss, 1.0, win]) / (loss + 1.0 + win)
    lim = markov.game(white, black)
    assert lim.ok and lim.reason == ""
    assert lim.vector.tolist() == pytest.approx(expected.tolist(), rel=1e-9, abs=1e-12)
    assert (lim.loss, lim.draw, lim.win) == pytest.approx(tuple(expected), rel=1e-9, abs=1e-12)
    assert lim.score == pytest.approx(expected[2] + 0.5 * expected[1], rel=1e-9)


def test_stationary_vector_of_a_two_state_chain() -> None:
    p, q = 0.3, 0.1
    m = np.array([[1 - p, p], [q, 1 - q]])
    assert markov.stationary(m).vector.tolist() == pytest.approx([q / (p + q), p / (p + q)])


def test_stationary_vector_does_not_depend_on_the_start() -> None:
    white, black = _three_state(0.2, 0.3, 0.1, 0.15)
    m = white @ black
    pi = markov.stationary(m).vector
    for start in ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]):
        walked = np.array(start) @ np.linalg.matrix_power(m, 2000)
        assert walked.tolist() == pytest.approx(pi.tolist(), abs=1e-12)


def test_two_traps_have_no_stationary_vector() -> None:
    # neither player ever leaves a won position: both end classes are closed
    white, black = _three_state(0.1, 0.1, 0.0, 0.0)
    reach = markov.reachable(white @ black)
    assert markov.closed_classes(reach) == [(0,), (2,)]
    assert not markov.one_closed_class(reach)
    pi, unique = markov.stationary_vectors((white @ black)[None])
    assert not unique[0] and np.isnan(pi[0]).all()


def test_one_trap_takes_everything() -> None:
    # only the win is closed; the loss and the draw are transient
    white, black = _three_state(0.1, 0.1, 0.0, 0.2)
    lim = markov.game(white, black)
    assert lim.ok
    assert lim.vector.tolist() == pytest.approx([0.0, 0.0, 1.0], abs=1e-12)


def test_a_closed_class_of_several_states() -> None:
    m = np.array(
        [
            [0.5, 0.5, 0.0, 0.0],
            [0.0, 0.2, 0.8, 0.0],
            [0.0, 0.6, 0.4, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )
    assert markov.closed_classes(markov.reachable(m)) == [(1, 2), (3,)]
    m[3] = [0.0, 0.0, 0.5, 0.5]  # 3 now drains into {1, 2}
    assert markov.closed_classes(markov.reachable(m)) == [(1, 2)]
    pi = markov.stationary(m).vector
    assert pi.tolist() == pytest.approx([0.0, 0.6 / 1.4, 0.8 / 1.4, 0.0])


def _trapped_pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    white = markov.stochastic(np.tril(rng.random((19, 19))))
    black = markov.stochastic(np.triu(rng.random((19, 19))))
    white[markov.WIN] = np.eye(19)[markov.WIN]
    black[markov.LOSS] = np.eye(19)[markov.LOSS]
    return white, black


def test_a_reducible_game_is_na_with_its_closed_classes() -> None:
    white, black = _trapped_pair(np.random.default_rng(8))
    lim = markov.game(white, black)
    assert not lim.ok and np.isnan(lim.score)
    assert lim.reason == (
        "n/a: the chain has 2 closed classes (≤ −200; ≥ +200 cp), so its stationary vector "
        "is not unique"
    )


def test_batched_vectors_equal_the_eigenvector() -> None:
    rng = np.random.default_rng(3)
    whites = np.stack([markov.stochastic(np.tril(rng.random((19, 19)))) for _ in range(3)])
    blacks = np.stack([markov.stochastic(np.triu(rng.random((19, 19)))) for _ in range(4)])
    chains = np.matmul(whites[:, None], blacks[None, :])
    pi, unique = markov.stationary_vectors(chains)
    assert pi.shape == (3, 4, 19) and unique.all()
    for i in range(3):
        for j in range(4):
            values, vectors = np.linalg.eig(chains[i, j].T)
            one = vectors[:, np.argmin(np.abs(values - 1))].real
            assert pi[i, j].tolist() == pytest.approx((one / one.sum()).tolist(), abs=1e-10)
            assert (pi[i, j] @ chains[i, j]).tolist() == pytest.approx(pi[i, j].tolist())


def test_end_rows_come_from_the_data() -> None:
    counts = np.zeros((19, 19))
    counts[9, 9] = 4
    counts[9, 8] = 1
    counts[12, 12] = 30
    counts[18, 18] = 25
    counts[18, 10] = 5  # an end row that was left: it comes from the data, not forced
    counts[0, 0] = 40  # ≤ −200 (won for Black) never left by this player's Black moves
    fallback = markov.stochastic(np.eye(19) * 10 + np.eye(19, k=-1) + np.eye(19, k=1))
    exits = markov.never_left(counts, white=False)
    assert exits.tolist() == [i == 0 for i in range(19)]
    m = markov.normalise(counts, fallback, 20, exit_pseudo=2, exits=exits)
    # row 9: 5 moves + 15 pseudo-moves spread like the fallback row
    assert m[9] == pytest.approx((counts[9] + 15 * fallback[9]) / 20)
    assert m[12, 12] == 1.0  # 30 moves: not blended, and not an end class
    assert m[18].tolist() == pytest.approx((counts[18] / 30).tolist())  # from the data
    # the class ≤ −200 was never left: 2 pseudo-moves of the all-players row
    assert m[0].tolist() == pytest.approx(((counts[0] + 2 * fallback[0]) / 42).tolist())
    assert m.sum(axis=1) == pytest.approx(np.ones(19))
    # for White only ≥ +200 can be left by the mover's errors, and here it was
    assert not markov.never_left(counts, white=True).any()
    counts[18, 10] = 0
    assert markov.never_left(counts, white=True).tolist() == [i == 18 for i in range(19)]


def test_mirror_swaps_both_indices() -> None:
    w = markov.stochastic(np.tril(np.arange(361, dtype=float).reshape(19, 19) + 1))
    b = markov.mirror(w)
    assert b[3, 5] == w[15, 13]
    assert np.allclose(np.tril(b, -1), 0)  # Black's matrix is upper triangular


def _conf(
    seed: int,
    players: dict[str, float],
    years: tuple[int, ...] = (2000,),
    safe_when_winning: str = "",
) -> pd.DataFrame:
    """Moves for players of different accuracy (mean error in cp), both colours, every year.
    The player ``safe_when_winning`` never errs at +200 cp or more."""
    rng = np.random.default_rng(seed)
    rows = []
    for year in years:
        for name, err in sorted(players.items()):
            for i in range(400):
                white = i % 2 == 0
                e_best = float(rng.normal(0, 150))  # about 9% of moves beyond ±200 cp
                d = float(rng.exponential(err)) if rng.random() < 0.5 else 0.0
                if name == safe_when_winning and e_best >= 200:
                    d = 0.0
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
    return headtohead.build_models(conf, q, None, cfg)


def test_self_play_is_half_and_swapping_gives_one_minus() -> None:
    models = _models(_conf(1, {"A": 20.0, "B": 60.0}))
    a, b = ("A", 2000), ("B", 2000)
    assert models.markov_score(a, a) == pytest.approx(0.5, abs=1e-12)
    s = models.markov_score(a, b)
    assert s > 0.5  # A errs less
    assert models.markov_score(b, a) == pytest.approx(1 - s, abs=1e-12)
    h2h = headtohead.head_to_head(models, 300)
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
    h2h = headtohead.head_to_head(models, 300)
    best = headtohead.best_years(h2h)
    chosen = best[best["best"]].set_index("player")["year"].to_dict()
    assert chosen == {"A": 2000, "B": 2000, "C": 2000}
    keys, matrix = headtohead.best_year_matrix(h2h, best)
    assert keys[0] == ("A", 2000) and keys[-1] == ("C", 2000)
    assert matrix[0, 1] > 0.5 and matrix[1, 0] < 0.5


def test_a_pair_without_unique_pi_is_na_in_the_head_to_head() -> None:
    """A and B never leave a won position as White and as Black respectively; A against B
    (A White) has two traps, B against A (B White) one. C is an ordinary player."""
    rng = np.random.default_rng(9)
    keys = [("A", 2000), ("B", 2000), ("C", 2000)]
    years = pd.DataFrame(
        {
            "player": [k[0] for k in keys],
            "year": [k[1] for k in keys],
            "eligible": True,
            "status": "",
        }
    )
    eye = np.eye(19)
    models = headtohead.Models(ConformanceSection(), years, {}, None, eye, eye)
    for key in keys:
        models.white[key], models.black[key] = _trapped_pair(rng)
    models.white[("B", 2000)] = markov.stochastic(np.tril(rng.random((19, 19))))
    models.black[("A", 2000)] = markov.stochastic(np.triu(rng.random((19, 19))))
    models.white[("C", 2000)] = markov.stochastic(np.tril(rng.random((19, 19))))
    models.black[("C", 2000)] = markov.stochastic(np.triu(rng.random((19, 19))))
    a, b, c = keys
    assert not models.markov_white(a, b).ok and models.markov_white(b, a).ok
    assert models.markov_score(a, b) is None and models.markov_score(b, a) is None
    assert models.markov_note(a, b).startswith("A 2000 with White: n/a: the chain has 2 closed")
    assert models.markov_score(a, c) is not None
    h2h = headtohead.head_to_head(models, 300)
    assert np.isnan(h2h.markov[0, 1]) and np.isnan(h2h.markov[1, 0])
    assert h2h.markov_note(0, 1) == models.markov_note(a, b)
    assert h2h.markov[0, 2] == pytest.approx(models.markov_score(a, c))
    assert not np.isnan(h2h.markov_white[1, 0])
    best = headtohead.best_years(h2h).set_index("player")
    assert best.loc["A", "no_score"] == 1 and best.loc["A", "opponents"] == 1
    assert best.loc["C", "no_score"] == 0 and best.loc["C", "opponents"] == 2


def test_an_end_row_never_left_gets_the_exit_pseudo_counts() -> None:
    conf = _conf(10, {"A": 30.0, "B": 30.0}, safe_when_winning="A")
    a = ("A", 2000)
    plain = _models(conf, markov_min_row=0, markov_exit_pseudo=0)
    assert plain.white_exits[a].tolist() == [i == 18 for i in range(19)]
    assert plain.white_rows[a][18] >= 10  # observed, and all stayed
    assert plain.white[a][18, 18] == 1.0
    models = _models(conf, markov_min_row=0, markov_exit_pseudo=2)
    n = plain.white_rows[a][18]
    expected = (n * np.eye(19)[18] + 2 * models.all_white[18]) / (n + 2)
    assert models.white[a][18].tolist() == pytest.approx(expected.tolist())
    assert models.white[a][18, 18] < 1.0
    # A is as careful with Black when winning (≤ −200, White's view); B is not
    assert models.black_exits[a].tolist() == [i == 0 for i in range(19)]
    assert models.black[a][0, 0] < 1.0
    b = ("B", 2000)
    assert not models.white_exits[b].any() and not models.black_exits[b].any()


def test_the_head_to_head_compares_the_player_years_with_the_most_moves() -> None:
    """Pairs grow as the square of the player-years: ``head_to_head_max`` bounds them to
    those with the most counted moves (ties by name), each pair scored as in the full table
    (to rounding: the chains are solved in batches of another shape)."""
    conf = _conf(8, {"A": 20.0, "B": 40.0, "C": 30.0, "D": 50.0, "E": 25.0})
    kept_moves = {"A": 400, "B": 260, "C": 400, "D": 330, "E": 230}
    keep = conf.groupby("player").cumcount() < conf["player"].map(kept_moves)
    models = _models(conf[keep].reset_index(drop=True))
    assert models.eligible == [(p, 2000) for p in "ABCDE"]  # at least 200 moves each
    full = headtohead.head_to_head(models, 300)
    assert full.keys == models.eligible
    capped = headtohead.head_to_head(models, 3)
    assert capped.keys == [("A", 2000), ("C", 2000), ("D", 2000)]
    at = [full.keys.index(k) for k in capped.keys]
    for name in ("markov", "markov_white", "gain", "conformance", "win", "loss"):
        mine, whole = getattr(capped, name), getattr(full, name)[np.ix_(at, at)]
        np.testing.assert_allclose(mine, whole, rtol=1e-12, atol=1e-15)
    assert headtohead.compared(models, 5) == models.eligible
    best = headtohead.best_years(capped)
    assert set(best["player"]) == {"A", "C", "D"} and (best["opponents"] == 2).all()
