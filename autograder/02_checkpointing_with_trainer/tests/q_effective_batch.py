OK_FORMAT = True

test = {   'name': 'q_effective_batch',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import contextlib\n'
                                               '>>> import io\n'
                                               '>>> import tempfile\n'
                                               '>>> from transformers import Trainer, TrainingArguments\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               '>>> from effitrain_lessons.with_trainer.trainer import StepMeter\n'
                                               ">>> got = {'effective_batch': predicted_effective_batch, 'optimizer_steps': predicted_optimizer_steps}\n"
                                               '>>> want = {}\n'
                                               '>>> check_meter = StepMeter()\n'
                                               '>>> check_trainer = Trainer(model=tiny_bert(), args=TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, '
                                               "gradient_accumulation_steps=3, num_train_epochs=2, save_strategy='no', report_to='none', disable_tqdm=True, use_cpu=True), "
                                               "train_dataset=tokenized_mrpc()['train'].select(range(96)), callbacks=[check_meter])\n"
                                               '>>> with contextlib.redirect_stdout(io.StringIO()):\n'
                                               '...     _ = check_trainer.train()\n'
                                               ">>> want['effective_batch'] = check_meter.rows_per_step[0]\n"
                                               ">>> want['optimizer_steps'] = check_trainer.state.global_step\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> check_prediction('predicted_effective_batch', got['effective_batch'], want['effective_batch'], why=phrase('Counted: the rows of the micro-batches "
                                               "in one optimizer step.'))\n"
                                               '>>> check_prediction(\'predicted_optimizer_steps\', got[\'optimizer_steps\'], want[\'optimizer_steps\'], why=phrase("Counted: Trainer\'s optimizer '
                                               'steps over the 2 epochs."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import contextlib\n'
                                               '>>> import io\n'
                                               '>>> import tempfile\n'
                                               '>>> from transformers import Trainer, TrainingArguments\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               ">>> got = {'effective_batch': predicted_effective_batch, 'optimizer_steps': predicted_optimizer_steps}\n"
                                               '>>> want = {}\n'
                                               '>>> practice_trainer = Trainer(model=tiny_bert(), args=TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, '
                                               "gradient_accumulation_steps=3, num_train_epochs=2, save_strategy='no', report_to='none', disable_tqdm=True, use_cpu=True), "
                                               "train_dataset=tokenized_mrpc()['train'].select(range(96)))\n"
                                               '>>> with contextlib.redirect_stdout(io.StringIO()):\n'
                                               '...     _ = practice_trainer.train()\n'
                                               ">>> want['optimizer_steps'] = practice_trainer.state.global_step\n"
                                               ">>> want['effective_batch'] = 96 * 2 // practice_trainer.state.global_step\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['optimizer_steps']) is int and type(got['effective_batch']) is int\n"
                                               ">>> assert got['optimizer_steps'] == want['optimizer_steps']\n"
                                               ">>> assert got['effective_batch'] == want['effective_batch']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
