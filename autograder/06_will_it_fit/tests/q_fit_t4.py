OK_FORMAT = True

test = {   'name': 'q_fit_t4',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.memory import format_bytes\n'
                                               '>>> from effitrain_lessons.plan import GPUS, estimate, largest_micro_batch, smallest_accumulation\n'
                                               '>>> def needs(batch, accumulation=1):\n'
                                               "...     return format_bytes(estimate('bert-base-uncased', batch=batch, seq=512, accumulation=accumulation, attention='eager').total)\n"
                                               ">>> t4 = format_bytes(GPUS['T4'])\n"
                                               ">>> k = smallest_accumulation('bert-base-uncased', 'T4', batch=32, seq=512, attention='eager')\n"
                                               ">>> largest = largest_micro_batch('bert-base-uncased', 'T4', seq=512, attention='eager')\n"
                                               ">>> for name, yours in (('smallest_accumulation_t4', smallest_accumulation_t4), ('largest_micro_batch_t4', largest_micro_batch_t4)):\n"
                                               "...     assert yours is not ..., phrase('{name} is still `...`: replace it with your answer.', name=name)\n"
                                               "...     assert type(yours) is int, phrase('{name} should be a whole number; it is a {kind}.', name=name, kind=type(yours).__name__)\n"
                                               ">>> assert smallest_accumulation_t4 >= 1 and 32 % smallest_accumulation_t4 == 0, phrase('smallest_accumulation_t4 should divide 32 (1, 2, 4, 8, 16 or "
                                               "32); it is {yours}.', yours=smallest_accumulation_t4)\n"
                                               ">>> assert smallest_accumulation_t4 <= k, phrase('You found smallest_accumulation_t4 = {yours}: too many. With {yours} micro-batches of {micro} a step "
                                               "needs {fits} (a T4 has {memory}): try fewer.', yours=smallest_accumulation_t4, micro=32 // smallest_accumulation_t4, fits=needs(32, "
                                               'smallest_accumulation_t4), memory=t4)\n'
                                               '>>> assert smallest_accumulation_t4 >= k, phrase("You found smallest_accumulation_t4 = {yours}: too few. With {yours} micro-batches of {micro} a step '
                                               'needs {over}, more than a T4\'s {memory}.", yours=smallest_accumulation_t4, micro=32 // smallest_accumulation_t4, over=needs(32, '
                                               'smallest_accumulation_t4), memory=t4)\n'
                                               ">>> assert largest_micro_batch_t4 >= 1, phrase('largest_micro_batch_t4 is a batch size: at least 1; it is {yours}.', yours=largest_micro_batch_t4)\n"
                                               '>>> assert largest_micro_batch_t4 <= largest, phrase("You found largest_micro_batch_t4 = {yours}: too large. A batch of {yours} needs {over}, more '
                                               'than a T4\'s {memory}.", yours=largest_micro_batch_t4, over=needs(largest_micro_batch_t4), memory=t4)\n'
                                               ">>> assert largest_micro_batch_t4 >= largest, phrase('You found largest_micro_batch_t4 = {yours}: too small. A batch of {yours} needs {fits} (a T4 has "
                                               "{memory}): a larger one fits too.', yours=largest_micro_batch_t4, fits=needs(largest_micro_batch_t4), memory=t4)\n",
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
