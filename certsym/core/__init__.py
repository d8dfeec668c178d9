"""The objects every decision works on: networks θ = (M, A, b, c) (``network``), the group H_n acting on them
(``group``), the reduction to θ_min by moves 1–3 (``reduction``), the canonical form (``canonical``), exact
linear algebra over a field (``linalg``) and deep networks (``deep``)."""
