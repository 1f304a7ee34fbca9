"""The live study: a scenario's ``study:`` section run with participants in a browser.

One study file is simulated (``simstudy run``), powered (``simstudy power``), preregistered
(``simstudy preregister``) and run live (``simstudy serve``); simulated participants walk the
real pages (``simstudy bots``) and ``simstudy export`` writes the table ``simstudy analyze``
reads. Modules:

- :mod:`~simstudy.study.live_section`: the ``study.live:`` section (torch-free, validated with the
  scenario);
- :mod:`~simstudy.live.engine`: policies, profiles and recourses for one participant;
- :mod:`~simstudy.live.database`: the participants' answers in SQLite;
- :mod:`~simstudy.live.flow`: the participant's path, page by page;
- :mod:`~simstudy.live.pages` and :mod:`~simstudy.live.app`: HTML and the server;
- :mod:`~simstudy.live.bots`, :mod:`~simstudy.live.export`,
  :mod:`~simstudy.live.prereg`: dry runs, the analysis table, the preregistration.
"""

__all__: list[str] = []
