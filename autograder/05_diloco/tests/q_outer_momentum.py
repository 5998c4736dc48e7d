OK_FORMAT = True

test = {   'name': 'q_outer_momentum',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.diloco.runs import outer_step_ratios\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'H = 16': last_step_h16}\n"
                                               '>>> want = {}\n'
                                               ">>> want['H = 16'] = outer_step_ratios(h=16, steps=128)[-1]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> check_prediction(\'last_step_h16\', got[\'H = 16\'], want[\'H = 16\'], rel=0.01, why=phrase("Measured with section 2\'s outer_step, the same '
                                               'change in every round. Re-read section 4, Why might H = 8 stall? A hypothesis, and a test."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.diloco.runs import outer_step_ratios\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               ">>> got = {'H = 4': last_step_h4}\n"
                                               '>>> want = {}\n'
                                               ">>> want['H = 4'] = outer_step_ratios(h=4, steps=128)[-1]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['H = 4']) in (int, float) and close(got['H = 4'], want['H = 4'], rtol=0.01)\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
