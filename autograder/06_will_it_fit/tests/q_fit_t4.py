OK_FORMAT = True

test = {   'name': 'q_fit_t4',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.memory import format_bytes\n'
                                               '>>> from effitrain_lessons.plan import GPUS, estimate, largest_micro_batch, smallest_accumulation\n'
                                               '>>> def needs(batch, accumulation=1):\n'
                                               "...     return format_bytes(estimate('bert-base-uncased', batch=batch, seq=512, accumulation=accumulation, attention='eager').total)\n"
                                               ">>> k = smallest_accumulation('bert-base-uncased', 'T4', batch=32, seq=512, attention='eager')\n"
                                               ">>> largest = largest_micro_batch('bert-base-uncased', 'T4', seq=512, attention='eager')\n"
                                               ">>> for name, yours, right, why in (('smallest_accumulation_t4', smallest_accumulation_t4, k, phrase('With {k} micro-batches of {micro} a step needs "
                                               "{fits}; with one of 32, {whole} (a T4 has {memory}).', k=k, micro=32 // k, fits=needs(32, k), whole=needs(32), memory=format_bytes(GPUS['T4']))), "
                                               "('largest_micro_batch_t4', largest_micro_batch_t4, largest, phrase('A batch of {largest} needs {fits}, one of {more} {over} (a T4 has {memory}).', "
                                               "largest=largest, fits=needs(largest), more=largest + 1, over=needs(largest + 1), memory=format_bytes(GPUS['T4'])))):\n"
                                               "...     assert yours is not ..., phrase('{name} is still `...`: replace it with your answer.', name=name)\n"
                                               "...     assert type(yours) is int, phrase('{name} should be a whole number, like {example}; it is {kind}.', name=name, example=right, "
                                               'kind=type(yours).__name__)\n'
                                               '...     assert yours == right, phrase("You found {name} = {yours}; the planner\'s solver finds {right}. {why}", name=name, yours=yours, right=right, '
                                               'why=why)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.plan import estimate\n'
                                               '>>> assert type(smallest_accumulation_t4) is int and type(largest_micro_batch_t4) is int\n'
                                               '>>> assert 32 % smallest_accumulation_t4 == 0\n'
                                               ">>> assert estimate('bert-base-uncased', batch=32, seq=512, accumulation=smallest_accumulation_t4, attention='eager').fits('T4')\n"
                                               ">>> assert not any((estimate('bert-base-uncased', batch=32, seq=512, accumulation=k, attention='eager').fits('T4') for k in range(1, "
                                               'smallest_accumulation_t4) if 32 % k == 0))\n'
                                               ">>> assert estimate('bert-base-uncased', batch=largest_micro_batch_t4, seq=512, attention='eager').fits('T4')\n"
                                               ">>> assert not estimate('bert-base-uncased', batch=largest_micro_batch_t4 + 1, seq=512, attention='eager').fits('T4')\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
