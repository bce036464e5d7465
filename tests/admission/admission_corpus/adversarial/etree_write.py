# expect: security.file_write
# evasion: ElementTree.write writes a file without open()
import xml.etree.ElementTree as ET


def agent_main(problem_data):
    tree = ET.ElementTree(ET.Element("x"))
    tree.write("/tmp/out.xml")
    return []
