"""Cost model: seconds per position at each profile, and what large collections would cost.

Judged by: the table itself (hours for 10,000 and 500,000 games on one 2-core machine and on
a 100-core cluster, from measured seconds per position and the demo's positions per game).
"""

from __future__ import annotations

from bench.common import STOCKFISH, demo_games
from bench.overhead import measure
from site_builder.analysis.positions import analysed_plies, game_plies
from site_builder.analysis.stage import identify_engine

PROFILES = [(10, 1, 150), (10, 10, 60), (14, 1, 60), (14, 10, 15), (18, 1, 10)]
#: Throughput per engine when every core runs one, against one engine alone: 0.95 on the
#: 2-vCPU benchmark machine (bench scaling: 1.83x, 2.10x and 1.98x for 2 engines in three
#: runs; the bare engine 1.79x and 2.01x); assumed for clusters.
EFFICIENCY = 0.95


def positions_per_game() -> tuple[float, float]:
    """(analysed moves per game, share of positions left after dedupe) on the demo."""
    games = demo_games("champions") + demo_games("world-championships")
    moves = [p.position for g in games for p in analysed_plies(game_plies(g, 9), 9)]
    return len(moves) / len(games), len(set(moves)) / len(moves)


def main() -> list[dict[str, float]]:
    engine = identify_engine(STOCKFISH)
    per_game, unique_share = positions_per_game()
    print(
        f"cost model: {per_game:.1f} analysed moves per game on the demo; "
        f"{100 * unique_share:.0f}% unique after dedupe (large collections dedupe more)"
    )
    print(
        f"{'profile':>16} {'s/pos':>7} {'10k games, 2 cores':>20} {'500k games, 2 cores':>21} "
        f"{'500k games, 100 cores':>22}"
    )
    rows = []
    for depth, multipv, n in PROFILES:
        r = measure(depth, multipv, n, engine)
        sec = r["per_position"]

        def hours(games: int, cores: int, s: float = sec) -> float:
            return games * per_game * unique_share * s / (cores * EFFICIENCY) / 3600

        rows.append(
            {
                **r,
                "h10k_2": hours(10_000, 2),
                "h500k_2": hours(500_000, 2),
                "h500k_100": hours(500_000, 100),
            }
        )
        print(
            f"{f'd{depth} multi-PV {multipv}':>16} {sec:>7.3f} {hours(10_000, 2):>18.1f} h "
            f"{hours(500_000, 2):>19.0f} h {hours(500_000, 100):>20.1f} h"
        )
    default = next(r for r in rows if r["depth"] == 10 and r["multipv"] == 10)
    print(
        f"RATIO default profile (depth 10, multi-PV 10): {default['per_position']:.3f} s per "
        f"position; 500,000 games on 100 cores: {default['h500k_100']:.1f} h"
    )
    return rows


if __name__ == "__main__":
    main()
