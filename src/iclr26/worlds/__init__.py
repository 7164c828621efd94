"""The worlds several fields share: the fact world with graded relation similarity (`facts`, used by the zoo's fact
models, the editing papers and ReST-KV's long-context tasks) and real text read at run time from what is installed
(`text`). A world one paper uses lives beside its method (`<field>/<paper>/world.py`)."""
