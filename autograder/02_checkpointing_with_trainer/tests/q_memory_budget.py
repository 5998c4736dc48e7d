OK_FORMAT = True

test = {   'name': 'q_memory_budget',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert as reference_bert\n'
                                               '>>> budgets = [3 * 2 ** 20]\n'
                                               ">>> got = {'plain': [largest_micro_batch(budget, False) for budget in budgets], 'checkpointed': [largest_micro_batch(budget, True) for budget in "
                                               'budgets]}\n'
                                               '>>> want = {}\n'
                                               ">>> budget_rows = tokenized_mrpc()['train']\n"
                                               '>>> def saved_by(budget_model, rows):\n'
                                               '...     with record_saved_tensors(budget_model) as log:\n'
                                               '...         budget_model(**budget_rows[:rows])\n'
                                               '...     return log.total_bytes\n'
                                               ">>> for name in ('plain', 'checkpointed'):\n"
                                               '...     budget_model = reference_bert()\n'
                                               '...     budget_model.config.use_cache = False\n'
                                               "...     if name == 'checkpointed':\n"
                                               '...         budget_model.activation_checkpointing_enable()\n'
                                               '...     _ = budget_model.train()\n'
                                               '...     one, two = (saved_by(budget_model, 1), saved_by(budget_model, 2))\n'
                                               '...     want[name] = []\n'
                                               '...     for budget in budgets:\n'
                                               '...         largest = (budget - (2 * one - two)) // (two - one)\n'
                                               '...         assert saved_by(budget_model, largest) <= budget < saved_by(budget_model, largest + 1)\n'
                                               '...         want[name].append(largest)\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> check_prediction('largest_micro_batch(budget, False)', got['plain'][0], want['plain'][0], why=phrase('Re-read section 5 and its table: what one "
                                               "micro-batch keeps for backward.'))\n"
                                               ">>> check_prediction('largest_micro_batch(budget, True)', got['checkpointed'][0], want['checkpointed'][0], why=phrase('Re-read section 4 (what "
                                               "checkpointing keeps) and section 5 (what one micro-batch keeps).'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert as reference_bert\n'
                                               '>>> budgets = [3 * 2 ** 19, 5 * 2 ** 20]\n'
                                               ">>> got = {'plain': [largest_micro_batch(budget, False) for budget in budgets], 'checkpointed': [largest_micro_batch(budget, True) for budget in "
                                               'budgets]}\n'
                                               '>>> want = {}\n'
                                               ">>> budget_rows = tokenized_mrpc()['validation']\n"
                                               '>>> def saved_by(budget_model, rows):\n'
                                               '...     with record_saved_tensors(budget_model) as log:\n'
                                               '...         budget_model(**budget_rows[:rows])\n'
                                               '...     return log.total_bytes\n'
                                               ">>> for name in ('plain', 'checkpointed'):\n"
                                               '...     budget_model = reference_bert()\n'
                                               '...     budget_model.config.use_cache = False\n'
                                               "...     if name == 'checkpointed':\n"
                                               '...         budget_model.activation_checkpointing_enable()\n'
                                               '...     _ = budget_model.train()\n'
                                               '...     one, two = (saved_by(budget_model, 1), saved_by(budget_model, 2))\n'
                                               '...     want[name] = []\n'
                                               '...     for budget in budgets:\n'
                                               '...         largest = (budget - (2 * one - two)) // (two - one)\n'
                                               '...         assert saved_by(budget_model, largest) <= budget < saved_by(budget_model, largest + 1)\n'
                                               '...         want[name].append(largest)\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> assert all((type(n) is int for name in want for n in got[name]))\n'
                                               '>>> assert got == want\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
