"""What pages draw, layered: players (a page's body that plays a Lab's steps) -> panels (one part of a page) ->
widgets (what every panel shares: a metric row, a chart's config, the Export control, the modelled target, the CSS).
Views import session state, never pages."""
