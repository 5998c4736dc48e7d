OK_FORMAT = True

test = {   'name': 'q_choose_blocks',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> yours = choose_blocks(uneven, uneven_ids, uneven_targets, BUDGET)\n'
                                               '>>> uneven.checkpointed = set()\n'
                                               ">>> got = {'choice': yours, 'kind': type(yours).__name__}\n"
                                               '>>> want = {}\n'
                                               ">>> want['plain'] = measure_choice(uneven, uneven_ids, uneven_targets)\n"
                                               ">>> want['freed'], want['extra'] = ([], [])\n"
                                               '>>> for i in range(len(uneven.blocks)):\n'
                                               '...     uneven.checkpointed = {i}\n'
                                               '...     alone = measure_choice(uneven, uneven_ids, uneven_targets)\n'
                                               "...     want['freed'].append(want['plain'].saved_bytes - alone.saved_bytes)\n"
                                               "...     want['extra'].append(alone.flops - want['plain'].flops)\n"
                                               '>>> uneven.checkpointed = set()\n'
                                               ">>> want['kept'] = want['plain'].saved_bytes\n"
                                               ">>> del want['plain']\n"
                                               ">>> want['budget'] = BUDGET\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['choice'] is not None, phrase('choose_blocks returns nothing yet: write its body.')\n"
                                               ">>> assert got['kind'] == 'list' and all((type(i) is int and 0 <= i < len(want['freed']) for i in got['choice'])), phrase('choose_blocks should return "
                                               "a list of block numbers, 0 to {last}; it returned a {kind}.', last=len(want['freed']) - 1, kind=got['kind'])\n"
                                               ">>> your_blocks = sorted(set(got['choice']))\n"
                                               ">>> assert want['kept'] - sum((want['freed'][i] for i in your_blocks)) <= want['budget'], phrase('Checkpointing blocks {blocks} keeps more than the "
                                               "budget: over budget. Measure what each block frees (section 3) and checkpoint more of them, or larger ones.', blocks=your_blocks)\n"
                                               ">>> assert sum((want['extra'][i] for i in your_blocks)) == min((sum((want['extra'][i] for i in range(len(want['freed'])) if mask >> i & 1)) for mask "
                                               "in range(2 ** len(want['freed'])) if want['kept'] - sum((want['freed'][i] for i in range(len(want['freed'])) if mask >> i & 1)) <= want['budget'])), "
                                               "phrase('Checkpointing blocks {blocks} fits the budget, but another set of blocks that fits recomputes fewer FLOPs: too many. Blocks of different "
                                               "widths free different bytes for different FLOPs (section 3): measure each one and try every set that fits.', blocks=your_blocks)\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> SETTINGS = (([64, 512, 128, 1024, 256], 3000000), ([64, 512, 128, 1024, 256], 7000000), ([256, 64, 768, 128], 4000000), ([256, 64, 768, 128], '
                                               '100000))\n'
                                               '>>> answers = []\n'
                                               '>>> for hidden, budget in SETTINGS:\n'
                                               '...     torch.manual_seed(1)\n'
                                               '...     other = GPT(int(uneven_stream.max()) + 1, 64, 64, 4, hidden=hidden)\n'
                                               '...     answers.append(choose_blocks(other, uneven_ids, uneven_targets, budget))\n'
                                               ">>> got = {'answers': answers}\n"
                                               '>>> want = {}\n'
                                               ">>> want['tables'] = []\n"
                                               '>>> for hidden, budget in SETTINGS:\n'
                                               '...     torch.manual_seed(1)\n'
                                               '...     other = GPT(int(uneven_stream.max()) + 1, 64, 64, 4, hidden=hidden)\n'
                                               '...     base = measure_choice(other, uneven_ids, uneven_targets)\n'
                                               '...     freed, extra = ([], [])\n'
                                               '...     for i in range(len(hidden)):\n'
                                               '...         other.checkpointed = {i}\n'
                                               '...         alone = measure_choice(other, uneven_ids, uneven_targets)\n'
                                               '...         freed.append(base.saved_bytes - alone.saved_bytes)\n'
                                               '...         extra.append(alone.flops - base.flops)\n'
                                               "...     want['tables'].append({'kept': base.saved_bytes, 'freed': freed, 'extra': extra, 'budget': budget})\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert len(got['answers']) == len(want['tables'])\n"
                                               ">>> for answer, table in zip(got['answers'], want['tables']):\n"
                                               "...     n = len(table['freed'])\n"
                                               "...     fitting = [sum((table['extra'][i] for i in range(n) if mask >> i & 1)) for mask in range(2 ** n) if table['kept'] - sum((table['freed'][i] for "
                                               "i in range(n) if mask >> i & 1)) <= table['budget']]\n"
                                               '...     if not fitting:\n'
                                               '...         assert answer is None\n'
                                               '...         continue\n'
                                               '...     assert type(answer) is list and all((type(i) is int and 0 <= i < n for i in answer))\n'
                                               "...     assert table['kept'] - sum((table['freed'][i] for i in set(answer))) <= table['budget']\n"
                                               "...     assert sum((table['extra'][i] for i in set(answer))) == min(fitting)\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
