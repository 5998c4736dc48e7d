OK_FORMAT = True

test = {   'name': 'q_crossover_k',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.local_sgd.runs import model_crossover_on\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.distributed_runs import Link\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'D': crossover_d}\n"
                                               '>>> want = {}\n'
                                               ">>> want['D'] = model_crossover_on(Link(latency_ms=10, megabits_per_s=12), layers=1, batch_size=4)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> check_prediction('crossover_d', got['D'], want['D'], why=phrase('Counted on link D, 2 processes. Re-read section 5, When does synchronizing less "
                                               "make training faster?'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.local_sgd.runs import model_crossover_on\n'
                                               '>>> from effitrain_lessons.shared.distributed_runs import Link\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'E': crossover_e}\n"
                                               '>>> want = {}\n'
                                               ">>> want['E'] = model_crossover_on(Link(latency_ms=2, megabits_per_s=10), layers=1, batch_size=4)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['E']) is int and got['E'] == want['E']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
