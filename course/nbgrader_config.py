"""nbgrader's configuration for the gpukit exercises (see notebooks/INSTRUCTORS.md).

The course directory is where nbgrader runs (its root is the current directory); build the
assignments into source/ with `python course/build.py` first.
"""

c = get_config()  # noqa: F821 - nbgrader defines get_config when it reads this file

c.CourseDirectory.course_id = "gpukit"
# The released kernel cell is the exercise's skeleton: its hints, then `pass` where each
# solution region was (nbgrader's default stub raises NotImplementedError, which would stop the
# "Try it" cell of every fresh notebook).
c.ClearSolutions.code_stub = {"python": "pass"}
# A check runs the learner's kernel on the simulator at many sizes; give slow machines room.
c.Execute.timeout = 300
