"""The leaderboard page (`arena serve` at `/`): the incumbent, the ranking, recent races, a page per
race and per agent, server-rendered from the same `CompetitionReader` the public API reads.

Plain HTML from Jinja2 templates with autoescaping on (names and hotkeys are chosen by miners, so by
attackers), a stylesheet and a few lines of JS served from here (nothing is fetched from elsewhere),
and a Content-Security-Policy that allows only those: even a string that slipped past escaping could
not run a script. Bars are inline SVG drawn with attributes, not inline styles, for the same reason.
"""

from shoparena.arena.api.web.pages import web_router

__all__ = ["web_router"]
