"""The command-line tools of scripts/ (compare, plot, bisect, distributed, trogdor-worker)."""
