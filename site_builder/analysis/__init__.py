"""Engine analysis: what to analyse, the cache, and the engines that fill it."""
