"""The live study: a scenario's ``study:`` section run with participants in a browser.

One study file is simulated (``simstudy run``), powered (``simstudy power``), preregistered
(``simstudy preregister``) and run live (``simstudy serve``); simulated participants walk the
real pages (``simstudy bots``) and ``simstudy export`` writes the table ``simstudy analyze``
reads. Modules:

- :mod:`~simstudy.study.live_section`: the ``study.live:`` section (torch-free, validated with the
  scenario);
- :mod:`~simstudy.study.live.engine`: policies, profiles and recourses for one participant;
- :mod:`~simstudy.study.live.database`: the participants' answers in SQLite;
- :mod:`~simstudy.study.live.flow`: the participant's path, page by page;
- :mod:`~simstudy.study.live.pages` and :mod:`~simstudy.study.live.app`: HTML and the server;
- :mod:`~simstudy.study.live.bots`, :mod:`~simstudy.study.live.export`,
  :mod:`~simstudy.study.live.prereg`: dry runs, the analysis table, the preregistration.
"""

__all__: list[str] = []
