"""Prepared proving keys: what a key needs that no witness changes, built at disk speed and cached."""
