"""Request colours are told apart by everyone (issue 28 item 16): every pair of the 16 colours is far apart in
CIELAB in normal vision and under simulated deuteranopia and protanopia (Machado, Oliveira & Fernandes 2009,
severity 1), and neighbouring ids (storm runs 12 requests at once) are further apart still."""

from __future__ import annotations

import itertools

import numpy as np

from pykv.viz import REQUEST_PALETTE, request_color
from pykv.viz.theme import DARK, LIGHT

DEUTERANOPIA = np.array(
    [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
)
PROTANOPIA = np.array(
    [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
)


def lab(hex_colour: str, cvd: np.ndarray | None = None) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour, as seen with the colour vision deficiency ``cvd`` (linear-RGB matrix)."""
    rgb = np.array([int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    if cvd is not None:
        linear = np.clip(cvd @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    f = np.where((t := xyz / np.array([0.95047, 1.0, 1.08883])) > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, cvd: np.ndarray | None = None) -> float:
    return float(np.linalg.norm(lab(a, cvd) - lab(b, cvd)))


def test_every_pair_of_request_colours_differs_for_every_reader():
    assert len(set(REQUEST_PALETTE)) == 16
    for a, b in itertools.combinations(REQUEST_PALETTE, 2):
        assert delta_e(a, b) >= 20, (a, b)
        assert delta_e(a, b, DEUTERANOPIA) >= 15, (a, b, "deuteranopia")
        assert delta_e(a, b, PROTANOPIA) >= 15, (a, b, "protanopia")


def test_neighbouring_requests_differ_most():
    ids = [str(i) for i in range(16)]
    for i, j in itertools.combinations(range(16), 2):
        if j - i <= 3:
            assert delta_e(request_color(ids[i]), request_color(ids[j])) >= 25, (i, j)
    assert delta_e(request_color("1"), request_color("8")) >= 20  # the pair the issue saw as one blue


def test_no_request_colour_looks_like_a_free_or_cached_block_or_the_page():
    for fill in REQUEST_PALETTE:
        for theme in (LIGHT, DARK):
            for part in ("free", "cached", "paper"):
                assert delta_e(fill, theme[part]) >= 15, (fill, part)
