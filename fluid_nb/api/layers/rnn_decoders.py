"""Fluid 1.8's decoding API: a ``Decoder`` says how one step goes, and ``dynamic_decode``
runs it in a ``While`` loop until every sequence has finished.

``BeamSearchDecoder`` keeps ``beam_size`` hypotheses per batch entry (states tiled to
``[batch, beam, ...]``), scores every continuation by its accumulated log-probability, keeps
the best ``beam_size`` and, at the end, traces each beam's tokens back through its parents
(``gather_tree``). ``BasicDecoder`` runs a cell and asks a ``DecodeHelper`` for the next
input: ``TrainingHelper`` slices the target sequence (teacher forcing),
``GreedyEmbeddingHelper`` embeds the argmax, ``SampleEmbeddingHelper`` embeds a sample.

In the loop, training mode (``is_test=False``) keeps every step's inputs and states in tensor
arrays so that the backward pass can read them; inference overwrites one set of variables.
Structures of states may be lists, tuples or namedtuples of Variables.
"""
import collections

import numpy as np

from ...tensor.dtypes import VarType, convert_dtype
from ...framework.program import default_main_program
from ..layer_helper import LayerHelper
from . import control_flow, creation, manip, math, nn, ops, tensor
from .arg_checks import boolean, checks, int_in, optional, variable
from .utils import flatten, is_sequence, map_structure, pack_sequence_as

__all__ = ["Decoder", "BeamSearchDecoder", "dynamic_decode", "DecodeHelper", "TrainingHelper",
           "GreedyEmbeddingHelper", "SampleEmbeddingHelper", "BasicDecoder", "gather_tree"]


_flatten, _pack_as, _map = flatten, pack_sequence_as, map_structure
_is_structure = is_sequence


# --- decoders -------------------------------------------------------------------------------
class Decoder:
    """What ``dynamic_decode`` runs:

    - ``initialize(inits) -> (initial_inputs, initial_states, finished)``, once;
    - ``step(time, inputs, states) -> (outputs, next_states, next_inputs, finished)``, per
      step (``finished``: bool ``[batch]`` or ``[batch, beam]``);
    - ``finalize(outputs, final_states, sequence_lengths) -> (outputs, final_states)``,
      optional, on the outputs of every step stacked along time.
    """

    def initialize(self, inits):
        raise NotImplementedError("Decoder.initialize: a decoder gives its first inputs")

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError("Decoder.step: a decoder says how one step goes")

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        """True when ``step`` keeps the finished flags itself (dynamic_decode then neither
        ORs them with the previous ones nor counts lengths)."""
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over a cell: at each step the cell runs on every beam (``[batch * beam,
    ...]``), ``output_fn`` turns its output into logits, and with ``log_probs`` the
    accumulated log-probability of each beam,

        score[b, k, v] = log_probs[b, k] + log softmax(logits[b, k])[v]

    (a finished beam only continues with ``end_token``, at no cost); the ``beam_size`` best
    (k, v) of each batch entry become the new beams, their states gathered from beam k.
    ``embedding_fn`` turns the chosen ids into the next inputs. The outputs of
    ``dynamic_decode`` are the ids ``[batch, time, beam]`` after ``finalize``.
    """

    OutputWrapper = collections.namedtuple("OutputWrapper",
                                           ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = collections.namedtuple("StateWrapper",
                                          ("cell_states", "log_probs", "finished", "lengths"))
    #: the log-probability of an impossible choice
    kinf = 1e9

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None,
                 output_fn=None):
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = start_token
        self.end_token = end_token
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """``[batch, ...]`` -> ``[batch * beam_size, ...]``, each entry repeated beam_size
        times in a row (to give an encoder's outputs to every beam)."""
        x = manip.unsqueeze(x, [1])
        times = [1] * len(x.shape)
        times[1] = beam_size
        return _merge_first_two_dims(manip.expand(x, times))

    def _split_batch_beams(self, x):
        if all(d >= 0 for d in x.shape[1:]):
            return manip.reshape(x, [-1, self.beam_size] + list(x.shape[1:]))
        # an unknown trailing dim (a source length): the first dim split at the end,
        # where reshape's 0s copy the dims before it
        rank = len(x.shape)
        x = manip.transpose(x, list(range(1, rank)) + [0])
        x = manip.reshape(x, [0] * (rank - 1) + [-1, self.beam_size])
        return manip.transpose(x, [rank - 1, rank] + list(range(rank - 1)))

    def _merge_batch_beams(self, x):
        return _merge_first_two_dims(x)

    def _expand_to_beam_size(self, x):
        x = manip.unsqueeze(x, [1])
        times = [1] * len(x.shape)
        times[1] = self.beam_size
        return manip.expand(x, times)

    def _mask_probs(self, probs, finished):
        """Finished beams put all their mass on end_token: their row becomes the no-end
        mask (0 at end_token, -kinf elsewhere); the others stay as they are."""
        finished = tensor.cast(finished, probs.dtype)
        ended = ops.elementwise_mul(
            manip.expand(manip.unsqueeze(finished, [2]), [1, 1, self.vocab_size]),
            self.noend_mask_tensor, axis=-1)
        return ended - ops.elementwise_mul(probs, finished - 1, axis=0)

    def _gather(self, x, indices, batch_size):
        """``x[b, indices[b, k], ...]`` for x ``[batch, beam or more, ...]``."""
        batch_pos = manip.expand(
            manip.unsqueeze(creation.range(0, batch_size, 1, dtype=indices.dtype), [1]),
            [1, self.beam_size])
        coordinates = manip.stack([batch_pos, indices], axis=2)
        coordinates.stop_gradient = True
        return manip.gather_nd(x, coordinates)

    def initialize(self, initial_cell_states):
        """Beams start from ``start_token`` with the cell states tiled ``[batch, beam,
        ...]``; only beam 0 is alive (log-probability 0, the others -kinf), so the first
        step does not pick one hypothesis beam_size times."""
        state = _flatten(initial_cell_states)[0]
        self.batch_size = tensor.cast(manip.slice(math.shape(state), axes=[0], starts=[0],
                                               ends=[1]), "int64")
        self.start_token_tensor = tensor.fill_constant([1], "int64", self.start_token)
        self.end_token_tensor = tensor.fill_constant([1], "int64", self.end_token)
        init_cell_states = _map(self._expand_to_beam_size, initial_cell_states)
        init_inputs = tensor.fill_constant_batch_size_like(
            input=state, shape=[-1, self.beam_size], dtype="int64", value=self.start_token)
        first_beam_only = tensor.assign(np.array([0.0] + [-self.kinf] * (self.beam_size - 1),
                                                 dtype="float32"))
        log_probs = ops.elementwise_add(tensor.fill_constant_batch_size_like(
            input=state, shape=[-1, self.beam_size], dtype="float32", value=0.0),
            first_beam_only, axis=-1)
        init_finished = tensor.fill_constant_batch_size_like(
            input=state, shape=[-1, self.beam_size], dtype="bool", value=False)
        init_lengths = tensor.zeros_like(init_inputs)
        if self.embedding_fn is not None:
            init_inputs = self.embedding_fn(init_inputs)
        return (init_inputs,
                self.StateWrapper(init_cell_states, log_probs, init_finished, init_lengths),
                init_finished)

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        self.vocab_size = logits.shape[-1]
        vocab_size_tensor = tensor.fill_constant([1], "int64", self.vocab_size)
        noend = np.full(self.vocab_size, -self.kinf, dtype="float32")
        noend[self.end_token] = 0
        self.noend_mask_tensor = tensor.assign(noend)
        step_log_probs = nn.log(nn.softmax(logits))
        step_log_probs = self._mask_probs(step_log_probs, beam_state.finished)
        log_probs = ops.elementwise_add(step_log_probs, beam_state.log_probs, axis=0)
        scores = manip.reshape(log_probs, [-1, self.beam_size * self.vocab_size])
        topk_scores, topk_indices = nn.topk(scores, k=self.beam_size)
        beam_indices = ops.elementwise_floordiv(topk_indices, vocab_size_tensor)
        token_indices = ops.elementwise_mod(topk_indices, vocab_size_tensor)
        next_log_probs = self._gather(scores, topk_indices, self.batch_size)
        next_cell_states = _map(lambda x: self._gather(x, beam_indices, self.batch_size),
                                next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_indices, self.batch_size)
        next_lengths = self._gather(beam_state.lengths, beam_indices, self.batch_size)
        next_lengths = next_lengths + tensor.cast(control_flow.logical_not(next_finished),
                                                  beam_state.lengths.dtype)
        next_finished = control_flow.logical_or(
            next_finished, control_flow.equal(token_indices, self.end_token_tensor))
        return (self.OutputWrapper(topk_scores, token_indices, beam_indices),
                self.StateWrapper(next_cell_states, next_log_probs, next_finished,
                                  next_lengths))

    def step(self, time, inputs, states, **kwargs):
        inputs = _map(self._merge_batch_beams, inputs)
        cell_states = _map(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = _map(self._split_batch_beams, cell_outputs)
        next_cell_states = _map(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        sample_ids = output.predicted_ids
        sample_ids.stop_gradient = True
        next_inputs = self.embedding_fn(sample_ids) if self.embedding_fn else sample_ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """Each beam's full sequence: ``gather_tree`` of the chosen ids and their parents
        (``[time, batch, beam]``)."""
        return gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self):
        # beams are reordered every step, and their finished flags with them
        return True


def _merge_first_two_dims(x):
    """``[a, b, ...]`` -> ``[a * b, ...]``, also when a dim after the first two is unknown
    (-1) while the program is built: then the two dims move to the end, where reshape's
    0s copy every dim before them."""
    if all(d >= 0 for d in x.shape[2:]):
        return manip.reshape(x, [-1] + list(x.shape[2:]))
    rank = len(x.shape)
    x = manip.transpose(x, list(range(2, rank)) + [0, 1])
    x = manip.reshape(x, [0] * (rank - 2) + [-1])
    return manip.transpose(x, [rank - 2] + list(range(rank - 2)))


def _create_array_in_parent_block(dtype):
    program = default_main_program()
    current = program.current_block_idx
    program.current_block_idx = program.current_block().parent_idx
    try:
        return control_flow.create_array(dtype)
    finally:
        program.current_block_idx = current


def _keep_finished(state, new_state, finished):
    """Where ``finished``, the old state; elsewhere the new one."""
    dtype = state.dtype
    if dtype == VarType.BOOL:
        state, new_state = tensor.cast(state, "float32"), tensor.cast(new_state, "float32")
    mask = tensor.cast(finished, state.dtype)
    mask.stop_gradient = True
    kept = ops.elementwise_mul(state, mask, axis=0) - ops.elementwise_mul(new_state, mask - 1,
                                                                        axis=0)
    return tensor.cast(kept, dtype) if dtype == VarType.BOOL else kept


@checks(max_step_num=optional(int_in(0)), output_time_major=boolean,
        impute_finished=boolean, is_test=boolean, return_length=boolean)
def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False,
                   impute_finished=False, is_test=False, return_length=False, **kwargs):
    """Run ``decoder`` step by step in a ``While`` loop until every entry has finished (or
    after step ``max_step_num``, counting from 0). Step ``t``'s outputs are stacked along
    time; ``impute_finished`` keeps a finished entry's states unchanged. Returns
    ``(outputs, final_states)`` (plus the lengths ``[batch]`` or ``[batch, beam]`` with
    ``return_length``), outputs ``[batch, time, ...]`` or ``[time, batch, ...]`` with
    ``output_time_major``, after ``decoder.finalize`` if it has one.
    """
    initial_inputs, initial_states, initial_finished = decoder.initialize(inits)
    global_inputs, global_states, global_finished = (initial_inputs, initial_states,
                                                     initial_finished)
    global_finished.stop_gradient = True
    step_idx = tensor.fill_constant([1], "int64", 0)
    cond = control_flow.logical_not(math.reduce_all(initial_finished))
    if max_step_num is not None:
        max_step_num = tensor.fill_constant([1], "int64", max_step_num)
    while_op = control_flow.While(cond, is_test=is_test)
    sequence_lengths = tensor.cast(tensor.zeros_like(initial_finished), "int64")
    sequence_lengths.stop_gradient = True
    if is_test:  # one set of variables, overwritten every step
        inputs, states = initial_inputs, initial_states
    else:  # every step's inputs and states kept for the backward pass
        inputs_arrays = _map(lambda x: control_flow.array_write(x, step_idx), initial_inputs)
        states_arrays = _map(lambda x: control_flow.array_write(x, step_idx), initial_states)
    with while_op.block():
        if not is_test:
            inputs = _map(lambda array: control_flow.array_read(array, step_idx),
                          inputs_arrays)
            states = _map(lambda array: control_flow.array_read(array, step_idx),
                          states_arrays)
        outputs, next_states, next_inputs, next_finished = decoder.step(step_idx, inputs,
                                                                        states, **kwargs)
        if not decoder.tracks_own_finished:
            next_finished = control_flow.logical_or(next_finished, global_finished)
            next_sequence_lengths = ops.elementwise_add(
                sequence_lengths, tensor.cast(control_flow.logical_not(global_finished),
                                              sequence_lengths.dtype))
            if impute_finished:
                next_states = _map(lambda old, new: _keep_finished(old, new, global_finished),
                                   states, next_states)
        else:
            next_sequence_lengths = getattr(next_states, "lengths", sequence_lengths)
        outputs_arrays = _map(lambda x: _create_array_in_parent_block(x.dtype), outputs)
        _map(lambda x, array: control_flow.array_write(x, i=step_idx, array=array), outputs,
             outputs_arrays)
        control_flow.increment(x=step_idx, value=1.0, in_place=True)
        # the finished flags first: they may be part of the decoder's states as well
        tensor.assign(next_finished, global_finished)
        tensor.assign(next_sequence_lengths, sequence_lengths)
        if is_test:
            _map(tensor.assign, next_inputs, global_inputs)
            _map(tensor.assign, next_states, global_states)
        else:
            _map(lambda x, array: control_flow.array_write(x, i=step_idx, array=array),
                 next_inputs, inputs_arrays)
            _map(lambda x, array: control_flow.array_write(x, i=step_idx, array=array),
                 next_states, states_arrays)
        if max_step_num is not None:
            control_flow.logical_and(
                control_flow.logical_not(math.reduce_all(global_finished)),
                control_flow.less_equal(step_idx, max_step_num), cond)
        else:
            control_flow.logical_not(math.reduce_all(global_finished), cond)
    final_outputs = _map(lambda array: manip.tensor_array_to_tensor(
        array, axis=0, use_stack=True)[0], outputs_arrays)
    if is_test:
        final_states = global_states
    else:
        final_states = _map(lambda array: control_flow.array_read(array, step_idx),
                            states_arrays)
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states,
                                                       sequence_lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = _map(
            lambda x: manip.transpose(x, [1, 0] + list(range(2, len(x.shape)))),
            final_outputs)
    if return_length:
        return final_outputs, final_states, sequence_lengths
    return final_outputs, final_states


# --- helpers of BasicDecoder ------------------------------------------------------------------
class DecodeHelper:
    """How ``BasicDecoder`` starts, samples and feeds itself:

    - ``initialize() -> (initial_inputs, initial_finished)``;
    - ``sample(time, outputs, states) -> sample_ids``;
    - ``next_inputs(time, outputs, states, sample_ids) -> (finished, next_inputs,
      next_states)``.
    """

    def initialize(self):
        raise NotImplementedError("DecodeHelper.initialize: a helper gives the first inputs")

    def sample(self, time, outputs, states):
        raise NotImplementedError("DecodeHelper.sample: a helper picks the ids of a step")

    def next_inputs(self, time, outputs, states, sample_ids):
        raise NotImplementedError("DecodeHelper.next_inputs: a helper feeds the next step")


class TrainingHelper(DecodeHelper):
    """Teacher forcing: step ``t`` reads step ``t`` of ``inputs`` (``[batch, time, ...]``,
    or ``[time, batch, ...]`` with ``time_major``); an entry has finished once ``t + 1``
    reaches its ``sequence_length``. The sampled ids (argmax) are not fed back."""

    def __init__(self, inputs, sequence_length, time_major=False):
        self.inputs = inputs
        self.sequence_length = sequence_length
        self.time_major = time_major
        # one step of padding, so that the last step's next input is a valid slice
        self.inputs_ = _map(lambda x: manip.pad(
            x, paddings=([0, 1] + [0, 0] * (len(x.shape) - 1)) if time_major else
            ([0, 0, 0, 1] + [0, 0] * (len(x.shape) - 2))), self.inputs)

    def initialize(self):
        init_finished = control_flow.equal(
            self.sequence_length,
            tensor.fill_constant([1], convert_dtype(self.sequence_length.dtype), 0))
        init_inputs = _map(lambda x: x[0] if self.time_major else x[:, 0], self.inputs)
        return init_inputs, init_finished

    def sample(self, time, outputs, states):
        return tensor.argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        if time.dtype != VarType.INT32:
            time = tensor.cast(time, "int32")
        lengths = self.sequence_length
        if lengths.dtype != time.dtype:
            lengths = tensor.cast(lengths, "int32")
        next_time = time + 1
        finished = control_flow.less_equal(lengths, next_time)
        axis = 0 if self.time_major else 1

        def step_of(x):
            return manip.squeeze(manip.slice(x, axes=[axis], starts=[next_time],
                                       ends=[next_time + 1]), axes=[axis])
        return finished, _map(step_of, self.inputs_), states


class GreedyEmbeddingHelper(DecodeHelper):
    """Greedy decoding: the argmax of each step's output, embedded by ``embedding_fn``, is
    the next input; an entry has finished when it emits ``end_token``. ``start_tokens``:
    int64 ``[batch]``."""

    def __init__(self, embedding_fn, start_tokens, end_token):
        self.embedding_fn = embedding_fn
        self.start_tokens = start_tokens
        self.end_token = tensor.fill_constant([1], "int64", end_token)

    def initialize(self):
        init_finished = tensor.fill_constant_batch_size_like(
            input=self.start_tokens, shape=[-1], dtype="bool", value=False)
        return self.embedding_fn(self.start_tokens), init_finished

    def sample(self, time, outputs, states):
        return tensor.argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        finished = control_flow.equal(sample_ids, self.end_token)
        return finished, self.embedding_fn(sample_ids), states


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """Like GreedyEmbeddingHelper, but the next id is drawn from ``softmax(outputs /
    softmax_temperature)`` (``seed`` fixes the draws)."""

    def __init__(self, embedding_fn, start_tokens, end_token, softmax_temperature=None,
                 seed=None):
        super().__init__(embedding_fn, start_tokens, end_token)
        self.softmax_temperature = None if softmax_temperature is None else \
            tensor.fill_constant([1], "float32", softmax_temperature)
        self.seed = seed

    def sample(self, time, outputs, states):
        logits = outputs if self.softmax_temperature is None else \
            ops.elementwise_div(outputs, self.softmax_temperature)
        probs = nn.softmax(logits)
        probs.stop_gradient = True  # sampling has no gradient
        draws = math.sampling_id(probs, seed=self.seed or 0)
        # the op gives the drawn columns in the probabilities' type: ids are integers
        return tensor.cast(draws, convert_dtype(self.start_tokens.dtype))


class BasicDecoder(Decoder):
    """A cell plus a DecodeHelper: each step runs the cell, applies ``output_fn`` (the
    output layer), lets the helper sample ids and choose the next inputs. Outputs:
    ``OutputWrapper(cell_outputs, sample_ids)``."""

    OutputWrapper = collections.namedtuple("OutputWrapper", ("cell_outputs", "sample_ids"))

    def __init__(self, cell, helper, output_fn=None):
        self.cell = cell
        self.helper = helper
        self.output_fn = output_fn

    def initialize(self, initial_cell_states):
        initial_inputs, initial_finished = self.helper.initialize()
        return initial_inputs, initial_cell_states, initial_finished

    def step(self, time, inputs, states, **kwargs):
        cell_outputs, cell_states = self.cell(inputs, states, **kwargs)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        sample_ids = self.helper.sample(time=time, outputs=cell_outputs, states=cell_states)
        sample_ids.stop_gradient = True
        finished, next_inputs, next_states = self.helper.next_inputs(
            time=time, outputs=cell_outputs, states=cell_states, sample_ids=sample_ids)
        return (self.OutputWrapper(cell_outputs, sample_ids), next_states, next_inputs,
                finished)


@checks(ids=variable, parents=variable)
def gather_tree(ids, parents):
    """The sequences of a beam search from each step's chosen ``ids`` and ``parents`` (the
    beam each came from), both ``[time, batch, beam]``: going back from the last step,
    ``out[t, b, k] = ids[t, b, p]`` with ``p`` the parent of the beam at ``t + 1``."""
    helper = LayerHelper("gather_tree")
    out = helper.create_variable_for_type_inference(dtype=ids.dtype)
    helper.append_op(type="gather_tree", inputs={"Ids": [ids], "Parents": [parents]},
                     outputs={"Out": [out]})
    return out
