"""The course's own machinery (maintainers and `make`, not the lessons).

| module | what it does |
|---|---|
| `catalog` | one entry per notebook: banners, the README table, timings, prerequisites |
| `executor` | runs notebooks offline in fresh kernels and stores their outputs (`make notebooks`) |
| `course_run` | `mtrl course` / `make course`: the course's main job, stage by stage |
| `diagram` | draws notebook 00's system figure |
| `site` | `make site`: the course as a static website, generated from the catalog |
| `student` | `make student`: output-free copies of the notebooks in `student/` |
| `nbfilter` | the notebooks' git clean filter and JupyterLab pre-save hook (metadata only) |
| `jupyter` | `make lab`: JupyterLab with this environment's kernel and clean saves |

The lessons themselves import `mtrl_course.notebook` (their bootstrap) and the step modules.
"""
