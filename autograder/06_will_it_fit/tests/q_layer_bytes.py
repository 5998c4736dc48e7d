OK_FORMAT = True

test = {   'name': 'q_layer_bytes',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> from effitrain_lessons.will_it_fit.plan import build\n'
                                               ">>> got = {'yours': layer_activation_bytes(32, 2, 64, 4, 256, dropout=False)}\n"
                                               '>>> want = {}\n'
                                               '>>> def measured_layer(s, b, h, a, f, dropout):\n'
                                               '...     p = 0.1 if dropout else 0.0\n'
                                               '...     saved = []\n'
                                               '...     for layers in (1, 2):\n'
                                               "...         model = build('bert-base-uncased', attention='eager', num_hidden_layers=layers, hidden_size=h, num_attention_heads=a, intermediate_size=f, "
                                               'vocab_size=256, hidden_dropout_prob=p, attention_probs_dropout_prob=p)\n'
                                               '...         with record_saved_tensors(model) as log:\n'
                                               '...             model(input_ids=torch.randint(256, (b, s), generator=torch.Generator().manual_seed(0)), labels=torch.zeros(b, dtype=torch.long))\n'
                                               '...         saved.append(log.total_bytes)\n'
                                               '...     return saved[1] - saved[0]\n'
                                               ">>> want['measured'] = measured_layer(32, 2, 64, 4, 256, dropout=False)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> check_prediction(\'layer_activation_bytes(32, 2, 64, 4, 256, dropout=False)\', got[\'yours\'], want[\'measured\'], rel=0.01, why=phrase("Re-read '
                                               'section 2.2, One layer\'s activations, against Korthikanti et al., and section 2.3, The gap is dropout\'s masks."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> from effitrain_lessons.will_it_fit.plan import build\n'
                                               '>>> SHAPES = ((32, 2, 64, 4, 256, False), (48, 3, 96, 6, 192, True), (40, 1, 128, 2, 512, False), (24, 4, 64, 8, 128, True))\n'
                                               ">>> got = {'answers': [layer_activation_bytes(s, b, h, a, f, dropout=dropout) for s, b, h, a, f, dropout in SHAPES]}\n"
                                               '>>> want = {}\n'
                                               ">>> want['measured'] = []\n"
                                               '>>> for s, b, h, a, f, dropout in SHAPES:\n'
                                               '...     p = 0.1 if dropout else 0.0\n'
                                               '...     saved = []\n'
                                               '...     for layers in (1, 2):\n'
                                               "...         model = build('bert-base-uncased', attention='eager', num_hidden_layers=layers, hidden_size=h, num_attention_heads=a, intermediate_size=f, "
                                               'vocab_size=256, hidden_dropout_prob=p, attention_probs_dropout_prob=p)\n'
                                               '...         with record_saved_tensors(model) as log:\n'
                                               '...             model(input_ids=torch.randint(256, (b, s), generator=torch.Generator().manual_seed(1)), labels=torch.zeros(b, dtype=torch.long))\n'
                                               '...         saved.append(log.total_bytes)\n'
                                               "...     want['measured'].append(saved[1] - saved[0])\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert len(got['answers']) == len(want['measured']) and all((type(answer) in (int, float) and abs(answer - measured) <= 0.01 * measured for "
                                               "answer, measured in zip(got['answers'], want['measured'])))\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
