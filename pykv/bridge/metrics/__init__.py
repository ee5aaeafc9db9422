"""Reading vLLM's Prometheus series: a pasted /metrics body (``parser``) or a live Prometheus server
(``prometheus_range``), both through the same scrapes-to-samples path (``scrapes``)."""
