OK_FORMAT = True

test = {   'name': 'q_plan_run',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import format_bytes\n'
                                               '>>> from effitrain_lessons.will_it_fit.plan import GPUS, estimate, supports_bf16\n'
                                               ">>> yours = plan_run('bert-large-uncased', 'T4', 512, 512)\n"
                                               ">>> got = {'plan': yours, 'kind': type(yours).__name__, 'tuple': type(yours) is tuple}\n"
                                               '>>> want = {}\n'
                                               ">>> want['bf16'] = supports_bf16('T4')\n"
                                               ">>> want['memory'] = format_bytes(GPUS['T4'])\n"
                                               ">>> want['fitting'] = {precision: [k for k in range(1, 512 + 1) if 512 % k == 0 and estimate('bert-large-uncased', batch=512, seq=512, accumulation=k, "
                                               "precision=precision, checkpointing=True, attention='sdpa').fits('T4')] for precision in ('bf16', 'fp16')}\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['plan'] is not None, phrase('plan_run returns nothing yet: write its body.')\n"
                                               ">>> assert got['tuple'] and len(got['plan']) == 2, phrase('plan_run should return a pair (precision, accumulation); it returned a {kind}.', "
                                               "kind=got['kind'])\n"
                                               ">>> precision, k = got['plan']\n"
                                               '>>> assert precision in (\'bf16\', \'fp16\'), phrase(\'The precision is "bf16" or "fp16"; it is {precision!r}.\', precision=precision)\n'
                                               ">>> assert want['bf16'] or precision != 'bf16', phrase('You planned bf16 on a T4, which has no bf16. Re-read what each lever buys: what does a T4 "
                                               "train in?')\n"
                                               ">>> assert type(k) is int and k >= 1 and (512 % k == 0), phrase('The accumulation should be a whole number that divides the batch (512); it is "
                                               "{k!r}.', k=k)\n"
                                               '>>> assert k in want[\'fitting\'][precision], phrase("With {k} micro-batches of {micro} a step needs more than a T4\'s {memory}: too few. Are gradient '
                                               'checkpointing and SDPA on?", k=k, micro=512 // k, memory=want[\'memory\'])\n'
                                               ">>> assert k == min(want['fitting'][precision]), phrase('With {k} micro-batches a step fits, but fewer fit too: too many. Did you plan it with "
                                               "gradient checkpointing and SDPA attention, and try every divisor from 1 up?', k=k)\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.will_it_fit.plan import estimate\n'
                                               ">>> PLANS = (('gpt2-medium', 'L4', 144, 1024), ('llama-3.2-1b-shaped', 'A100-40GB', 96, 2048), ('llama-3.2-1b-shaped', 'T4', 8, 2048))\n"
                                               '>>> answers = [plan_run(model, gpu, batch, seq) for model, gpu, batch, seq in PLANS]\n'
                                               ">>> got = {'answers': answers, 'tuples': [type(answer) is tuple for answer in answers]}\n"
                                               '>>> want = {}\n'
                                               ">>> want['answers'] = []\n"
                                               ">>> for (model, gpu, batch, seq), precision in zip(PLANS, ('bf16', 'bf16', 'fp16')):\n"
                                               '...     fitting = [k for k in range(1, batch + 1) if batch % k == 0 and estimate(model, batch=batch, seq=seq, accumulation=k, precision=precision, '
                                               "checkpointing=True, attention='sdpa').fits(gpu)]\n"
                                               "...     want['answers'].append([precision, fitting[0] if fitting else None])\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert all(got['tuples']) and got['answers'] == want['answers']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
