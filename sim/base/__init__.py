"""Primitives every layer uses: the error classes and vector clocks. Imports nothing of sim."""
