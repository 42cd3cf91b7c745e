from site_builder.cli import main

if __name__ == "__main__":  # a pool's worker imports this module again, as __mp_main__
    raise SystemExit(main())
