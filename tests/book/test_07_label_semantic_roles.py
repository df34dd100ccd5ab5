"""Chapter 07 of the PaddlePaddle book (examples/label_semantic_roles.py) on a small corpus
in CoNLL-2005's own formats: the book's program trains a few batches (the CRF cost falls),
saves the decoder as an inference model, loads it back and tags sentences with it."""
import argparse
import hashlib
import os

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.dataset import common, conll05
from tests.dataset.conftest import gz, tar_bytes
from tests.examples.example_loader import load_example

VOCAB = "<unk> the a cat dog man woman mat park ball . bos eos".split()
VERBS = ["sit", "see", "throw"]
ROLES = ["A0", "A1"]


def _sentences(count, seed=0):
    """Sentences ``A0-words VERB A1-words .``: the roles are where the words stand."""
    rng = np.random.RandomState(seed)
    nouns = VOCAB[3:10]
    for _ in range(count):
        left = [str(w) for w in rng.choice(nouns, rng.randint(1, 3))]
        right = [str(w) for w in rng.choice(nouns, rng.randint(1, 4))]
        verb = VERBS[rng.randint(len(VERBS))]
        yield left, verb, right


def _conll_files(count):
    """The words and props columns (bracket notation) of ``count`` sentences."""
    words, props = [], []
    for left, verb, right in _sentences(count):
        for i, w in enumerate(left):
            words.append(w)
            props.append("-  " + ("(A0*" if i == 0 else "*") + (")" if i == len(left) - 1
                                                                 else ""))
        words.append(verb)
        props.append(f"{verb}  (V*)")
        for i, w in enumerate(right):
            words.append(w)
            props.append("-  " + ("(A1*" if i == 0 else "*") + (")" if i == len(right) - 1
                                                                 else ""))
        words += [".", ""]
        props += ["-  *", ""]
    return "\n".join(words).encode() + b"\n", "\n".join(props).encode() + b"\n"


@pytest.fixture
def conll05_files(tmp_path, monkeypatch):
    """DATA_HOME holding a small CoNLL-05 in the real formats; no download is tried."""
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path / "data_home"))

    def put(md5_name, url, payload):
        path = common.cache_path(url, "conll05st")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(payload)
        monkeypatch.setattr(conll05, md5_name, hashlib.md5(payload).hexdigest())

    words, props = _conll_files(12)
    put("DATA_MD5", conll05.DATA_URL, tar_bytes({conll05.WORDS_NAME: gz(words),
                                                 conll05.PROPS_NAME: gz(props)}))
    put("WORDDICT_MD5", conll05.WORDDICT_URL, "\n".join(VOCAB).encode() + b"\n")
    put("VERBDICT_MD5", conll05.VERBDICT_URL, "\n".join(VERBS).encode() + b"\n")
    labels = [f"{t}-{r}" for r in ROLES + ["V"] for t in "BI"] + ["O"]
    put("TRGDICT_MD5", conll05.TRGDICT_URL, "\n".join(labels).encode() + b"\n")
    emb = np.random.RandomState(1).uniform(-0.5, 0.5, (len(VOCAB), 32)).astype("float32")
    put("EMB_MD5", conll05.EMB_URL, b"\0" * 16 + emb.tobytes())
    return emb


@pytest.fixture
def chapter(conll05_files):
    """The book's script as a module (it reads the dictionaries as it loads), sized down."""
    module = load_example("label_semantic_roles")
    module.args = argparse.Namespace(enable_ce=True, use_gpu=0, num_epochs=10)
    module.hidden_dim, module.depth = 32, 2
    module.BATCH_SIZE, module.PASS_NUM = 4, 10
    return module


def test_the_chapter_trains_saves_reloads_and_tags(chapter, tmp_path, capsys):
    save_dir = str(tmp_path / "label_semantic_roles.inference.model")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.scope_guard(fluid.Scope()):
        costs = chapter.train(False, save_dir)
        trained = fluid.global_scope()
        frozen = np.asarray(trained.find_var("emb").get_tensor())
    # 12 samples in batches of 4, ten passes; the CRF cost of a pass falls
    assert len(costs) == 30
    first, last = np.mean(costs[:3]), np.mean(costs[-3:])
    assert last < 0.75 * first, costs
    # the pre-trained word table is loaded and kept (trainable=False)
    np.testing.assert_array_equal(frozen, chapter.load_parameter(
        conll05.get_embedding(), len(VOCAB), 32))
    ops = [op.type for op in main.global_block().ops]
    for op in ("linear_chain_crf", "linear_chain_crf_grad", "crf_decoding", "chunk_eval"):
        assert op in ops
    output = capsys.readouterr().out
    assert "avg_cost:" in output and "pass 9: precision" in output

    assert os.path.isfile(os.path.join(save_dir, "__model__"))
    assert os.path.isfile(os.path.join(save_dir, "crfw"))
    tags = chapter.infer(False, save_dir)
    assert tags.lod() == [[0, 3, 7, 9]]
    values = np.asarray(tags)
    assert values.shape == (9, 1) and values.dtype == np.int64
    assert ((0 <= values) & (values < chapter.label_dict_len)).all()
    assert "Inference Shape:  (9, 1)" in capsys.readouterr().out


def test_the_reloaded_decoder_tags_as_the_trained_program_does(chapter, tmp_path):
    save_dir = str(tmp_path / "model")
    main, startup = fluid.Program(), fluid.Program()
    chapter.PASS_NUM = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.scope_guard(fluid.Scope()):
        chapter.train(False, save_dir)
        sample = next(chapter.paddle.batch(conll05.test(), batch_size=3)())
        place = fluid.CPUPlace()
        names = ["word_data", "ctx_n2_data", "ctx_n1_data", "ctx_0_data", "ctx_p1_data",
                 "ctx_p2_data", "verb_data", "mark_data", "target"]
        feed = {}
        for k, name in enumerate(names):
            seqs = [s[k] for s in sample]
            feed[name] = fluid.create_lod_tensor(
                np.concatenate(seqs).reshape(-1, 1).astype("int64"),
                [[len(s) for s in seqs]], place)
        decode = next(op for op in main.global_block().ops if op.type == "crf_decoding")
        test_program = main.clone(for_test=True)
        exe = fluid.Executor(place)
        want, = exe.run(test_program, feed=feed, fetch_list=decode.output("ViterbiPath"))
        with fluid.scope_guard(fluid.Scope()):
            program, feeds, fetches = fluid.io.load_inference_model(save_dir, exe)
            got, = exe.run(program, feed={n: feed[n] for n in feeds}, fetch_list=fetches)
    np.testing.assert_array_equal(got, want)
