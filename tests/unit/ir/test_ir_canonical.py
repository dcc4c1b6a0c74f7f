import ir_samples
from pysycl.ir.canonical import canonical_text, module_hash
from pysycl.ir.clone import clone_module
from pysycl.ir.compare import module_difference
from pysycl.ir.core import Loc, Module
from pysycl.ir.parser import parse_module
from pysycl.ir.printer import print_module


def test_hash_is_stable_across_print_parse_and_clone():
    for make in ir_samples.ALL.values():
        m = make()
        h = module_hash(m)
        assert len(h) == 64
        assert module_hash(parse_module(print_module(m))) == h
        assert module_hash(clone_module(m)) == h
        assert module_hash(make()) == h


def test_hash_pins_the_text_format():
    # Changing the printed form changes every cache key: do it on purpose only.
    assert canonical_text(Module("m")) == 'module "m"\n'
    assert module_hash(Module("m")) == (
        "d48dab050c8c02b45f41fc84556d84eac914152c1307490306053d40ca783411")


def test_attribute_insertion_order_does_not_matter():
    a = Module("m", attrs={"x": 1, "y": 2})
    b = Module("m", attrs={"y": 2, "x": 1})
    assert module_hash(a) == module_hash(b)


def test_locations_are_part_of_the_key_unless_left_out():
    a, b = ir_samples.vector_add(), ir_samples.vector_add()
    b.functions[0].body.ops[0].loc = Loc("kernels.py", 99, 8)
    assert module_hash(a) != module_hash(b)
    assert module_hash(a, locs=False) == module_hash(b, locs=False)


def test_different_programs_differ():
    a, b = ir_samples.vector_add(), ir_samples.vector_add()
    b.functions[0].body.ops[-2].name = "sub"
    assert module_hash(a) != module_hash(b)
    assert module_difference(a, b) is not None


def test_clone_shares_no_values():
    m = ir_samples.tree_reduction()
    c = clone_module(m)
    old = {id(op) for op in m.functions[0].walk()}
    assert not any(id(op) in old for op in c.functions[0].walk())
    assert module_difference(m, c) is None
