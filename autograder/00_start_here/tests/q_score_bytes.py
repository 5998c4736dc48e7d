OK_FORMAT = True

test = {   'name': 'q_score_bytes',
    'points': 1,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'bytes': score_bytes(8, 32, torch.bfloat16)}\n"
                                               '>>> want = {}\n'
                                               ">>> want['bytes'] = torch.empty(8, model.config.num_attention_heads, 32, 32, dtype=torch.bfloat16).nbytes\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> check_prediction(\'score_bytes(8, 32, torch.bfloat16)\', got[\'bytes\'], want[\'bytes\'], why=phrase("Re-read exercise 2\'s introduction: what the '
                                               'attention computes a score for; and exercise 1: the bytes of each element."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> cases = [(4, 128, torch.float32), (2, 512, torch.float16)]\n'
                                               ">>> got = {'bytes': [score_bytes(sequences, tokens, dtype) for sequences, tokens, dtype in cases]}\n"
                                               '>>> want = {}\n'
                                               ">>> want['bytes'] = [torch.empty(sequences, model.config.num_attention_heads, tokens, tokens, dtype=dtype).nbytes for sequences, tokens, dtype in "
                                               'cases]\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['bytes']) is list and all((type(n) is int for n in got['bytes']))\n"
                                               ">>> assert got['bytes'] == want['bytes']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
