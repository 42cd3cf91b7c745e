"""site_builder: rate chess players by the quality of their moves and publish a static site."""

__version__ = "0.1.0"
