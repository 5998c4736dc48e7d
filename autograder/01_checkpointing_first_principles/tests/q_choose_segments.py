OK_FORMAT = True

test = {   'name': 'q_choose_segments',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import deep_stack, stack_input, sweep_segments\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'k': choose_segments(20), 'k_360': choose_segments(360)}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               '>>> stack_20 = deep_stack(n_blocks=20, width=64, seed=0)\n'
                                               '>>> measured = sweep_segments(stack_20, stack_input(stack_20, batch=16, seed=0), repeats=1)\n'
                                               ">>> want['rows'] = {str(row.k): [row.kept_bytes, row.flops] for row in measured.rows}\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> k, rows = (got['k'], want['rows'])\n"
                                               ">>> assert got['cpu_seconds'] < 1.0, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='choose_segments', seconds=round(got['cpu_seconds'], 1))\n"
                                               ">>> assert type(k) is int and k >= 1 and (20 % k == 0), phrase('choose_segments(20) should be a whole number of segments that splits the 20 blocks "
                                               "evenly')\n"
                                               ">>> k_360 = got['k_360']\n"
                                               ">>> assert type(k_360) is int and k_360 >= 1 and (360 % k_360 == 0), phrase('choose_segments(360) should be a whole number of segments that splits the "
                                               "360 blocks evenly')\n"
                                               '>>> least = min((kept for kept, flops in rows.values()))\n'
                                               ">>> assert rows[str(k)][0] == least, phrase('another k keeps fewer activations for these 20 blocks than yours: re-read section 3, From toy to real: a "
                                               "deep stack')\n"
                                               '>>> cheapest = min((flops for kept, flops in rows.values() if kept == least))\n'
                                               ">>> assert rows[str(k)][1] == cheapest, phrase('another k keeps the same memory as yours for fewer FLOPs: re-read section 3, From toy to real: a deep "
                                               "stack')\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import deep_stack, stack_input, sweep_segments\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> got = {str(n): choose_segments(n) for n in (12, 16, 30, 240, 360)}\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               '>>> for n in (12, 16, 30):\n'
                                               '...     stack_n = deep_stack(n_blocks=n, width=32, seed=1)\n'
                                               '...     measured = sweep_segments(stack_n, stack_input(stack_n, batch=8, seed=1), repeats=1)\n'
                                               '...     want[str(n)] = {str(row.k): [row.kept_bytes, row.flops] for row in measured.rows}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['cpu_seconds'] < 1.0\n"
                                               '>>> for n in (240, 360):\n'
                                               '...     assert type(got[str(n)]) is int and got[str(n)] >= 1 and (n % got[str(n)] == 0)\n'
                                               '>>> for n in (12, 16, 30):\n'
                                               '...     k, rows = (got[str(n)], want[str(n)])\n'
                                               '...     least = min((kept for kept, flops in rows.values()))\n'
                                               '...     cheapest = min((flops for kept, flops in rows.values() if kept == least))\n'
                                               '...     assert type(k) is int and k >= 1 and (n % k == 0)\n'
                                               '...     assert rows[str(k)][0] == least\n'
                                               '...     assert rows[str(k)][1] == cheapest\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
