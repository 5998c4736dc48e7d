"""Code the lessons write in their cells, saved by `effitrain build` (cells marked `#@save`).

`lesson_NN.py` holds lesson NN's saved cells, so that a launcher (`torchrun`, `accelerate launch`)
runs the very loop the learner reads in the notebook. Never edit those files: edit the lesson.
"""
